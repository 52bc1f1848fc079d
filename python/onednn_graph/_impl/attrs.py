"""Attribute checking and normalization of the convolution-family ops.

Names and values are the specification's (``auto_pad`` in lower case, formats
as ``NXC``/``XOI``...). What the linked oneDNN is handed instead (its own
spellings, lowered geometry) is decided in ``_impl/lowering.py``, not here.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import registry as _registry

AUTO_PADS = ("none", "same_upper", "same_lower", "valid")
DATA_FORMATS = ("NXC", "NCX")

SPATIAL_LISTS = ("strides", "pads_begin", "pads_end", "dilations", "output_padding")
REQUIRED = ("strides", "pads_begin", "pads_end", "dilations")


@dataclass(frozen=True)
class ConvAttrs:
    """The normalized attributes of one call (shape attributes excluded)."""

    kind: str
    strides: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    dilations: tuple[int, ...]
    auto_pad: str
    output_padding: tuple[int, ...]
    groups: int
    data_format: str
    weights_format: str

    @property
    def spatial_rank(self) -> int:
        return len(self.strides)

    def as_dict(self) -> dict[str, Any]:
        """Spec attribute names -> values (lists for lists)."""
        return {name: (list(v) if isinstance(v, tuple) else v)
                for name, v in self.__dict__.items() if name != "kind"}


def schema(kind: str) -> tuple[str, ...]:
    """The attribute names the specification lists for `kind` (or its legacy name)."""
    names: tuple[str, ...] = SPATIAL_LISTS + ("auto_pad", "groups", "data_format")
    if _registry.is_legacy(kind):
        return names + tuple(_registry.LEGACY.attr_names)
    shape_attr = _registry.spec(kind).shape_attr
    return names + ("weights_format",) + ((shape_attr,) if shape_attr else ())


def _type_name(value: Any) -> str:
    return type(value).__name__


def _is_int(value: Any) -> bool:
    return (not isinstance(value, (bool, np.bool_, float, np.floating))
            and hasattr(value, "__index__"))


# oneDNN stores every int attribute and dim as int64.
INT64_MAX = 2**63 - 1


def check_int(name: str, value: Any, minimum: int) -> int:
    """An int attribute in [minimum, 2**63) (bool and float are refused, not converted)."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an int, got {_type_name(value)} {value!r}")
    value = operator.index(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if value > INT64_MAX:
        raise ValueError(f"{name} must be < 2**63 (oneDNN stores int64), got {value}")
    return value


def check_int_list(name: str, value: Any, minimum: int, length: int | None = None,
                   expected: str = "a list of ints") -> tuple[int, ...]:
    """A list of ints, each >= minimum, of the given length when known."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be {expected}, got {_type_name(value)} {value!r}")
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {value.shape}")
    items = tuple(check_int(f"{name}[{i}]", v, minimum) for i, v in enumerate(value))
    if length is not None and len(items) != length:
        raise ValueError(f"{name} must have {length} entries (one per spatial axis), "
                         f"got {len(items)}: {list(items)}")
    return items


def check_choice(name: str, value: Any, choices: Sequence[str], *, fold_case: bool = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {_type_name(value)} {value!r}")
    key = value.lower() if fold_case else value
    if key not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return key


def _spatial(name: str, value: Any, rank: int, minimum: int) -> tuple[int, ...]:
    # The functional API takes an int for "the same on every spatial axis".
    if _is_int(value):
        return (check_int(name, value, minimum),) * rank
    return check_int_list(name, value, minimum, rank, expected="an int or a list of ints")


# Pads may be negative: the spec text says non-negative, but oneDNN 3.2 accepts
# negative pads when an op is added (seed README), and the PyTorch, JAX and ONNX
# conventions reach them (onednn_graph.padding): a negative pad adds that many
# output positions outside every kernel window (_lowering: the crop).
_MINIMUM = {"strides": 1, "dilations": 1, "pads_begin": -INT64_MAX, "pads_end": -INT64_MAX,
            "output_padding": 0}


def normalize(kind: str, spatial_rank: int, *, strides: Any = 1, pads_begin: Any = 0,
              pads_end: Any = 0, dilations: Any = 1, auto_pad: Any = "none",
              output_padding: Any = 0, groups: Any = 1, data_format: Any = "NXC",
              weights_format: Any = None) -> ConvAttrs:
    """Check the functional API's keywords and return them normalized.

    Ints broadcast to every spatial axis; ``auto_pad`` is case-insensitive;
    ``weights_format`` defaults to the op's default (XOI, or XIO for
    ConvolutionBackwardData).
    """
    if kind not in _registry.SPECS:
        raise ValueError(f"unknown op kind {kind!r}; expected one of {', '.join(_registry.KINDS)}")
    values = dict(strides=strides, pads_begin=pads_begin, pads_end=pads_end,
                  dilations=dilations, output_padding=output_padding)
    lists = {name: _spatial(name, v, spatial_rank, _MINIMUM[name]) for name, v in values.items()}
    formats = _registry.SPECS[kind].weights_formats
    return ConvAttrs(
        kind=kind, **lists,
        auto_pad=check_choice("auto_pad", auto_pad, AUTO_PADS, fold_case=True),
        groups=check_int("groups", groups, 1),
        data_format=check_choice("data_format", data_format, DATA_FORMATS),
        weights_format=check_choice("weights_format",
                                    formats[0] if weights_format is None else weights_format,
                                    formats))


def check_op_attrs(kind: str, attrs: Mapping[str, Any] | None,
                   spatial_rank: int | None) -> dict[str, Any]:
    """Check a low-level Op's attribute dict against the spec's schema.

    Unlike the functional API, the spec's required attributes must be given
    and lists are not broadcast. Returns the attributes normalized (lists as
    lists, auto_pad in lower case). `spatial_rank` is None when the inputs'
    rank is unknown; the lists must then agree with each other.
    """
    if attrs is not None and not isinstance(attrs, Mapping):
        raise TypeError(f"{kind}: attrs must be a dict, got {_type_name(attrs)}")
    attrs = dict(attrs or {})
    allowed = schema(kind)
    for name in attrs:
        if not isinstance(name, str):
            raise TypeError(f"{kind}: attribute names must be str, got {name!r}")
        if name not in allowed:
            raise ValueError(f"{kind}: unknown attribute {name!r}; "
                             f"the specification lists {', '.join(allowed)}")
    missing = [name for name in REQUIRED if name not in attrs]
    if missing:
        raise ValueError(f"{kind}: missing required attribute(s) {', '.join(missing)}")
    out: dict[str, Any] = {}
    for name in SPATIAL_LISTS:
        if name in attrs:
            out[name] = list(check_int_list(name, attrs[name], _MINIMUM[name], spatial_rank))
            spatial_rank = len(out[name])
    checks: dict[str, Callable[[Any], Any]] = {
        "auto_pad": lambda v: check_choice("auto_pad", v, AUTO_PADS, fold_case=True),
        "groups": lambda v: check_int("groups", v, 1),
        "data_format": lambda v: check_choice("data_format", v, DATA_FORMATS),
        "weights_format": lambda v: check_choice("weights_format", v,
                                                 _registry.spec(kind).weights_formats),
        "filter_format": lambda v: check_choice("filter_format", v,
                                                tuple(_registry.LEGACY.formats)),
    }
    for name, value in attrs.items():
        if name in checks:
            out[name] = checks[name](value)
        elif name not in out:  # a shape attribute
            out[name] = list(check_int_list(name, value, 1))
    return out


def from_legacy(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """ConvTransposeBackpropFilters attributes -> ConvTransposeBackwardWeights ones
    (names and format; the filter shape's axes: shapes.from_legacy_filter)."""
    legacy = _registry.LEGACY
    out = {}
    for name, value in attrs.items():
        if name == "filter_format":
            value = legacy.formats[value]
        out[legacy.attr_names.get(name, name)] = value
    return out

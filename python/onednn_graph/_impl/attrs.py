"""Attribute checking and normalization of the convolution-family ops.

Names and values are the specification's (``auto_pad`` in lower case, formats
as ``NXC``/``XOI``...). What the linked oneDNN is handed instead (its own
spellings, lowered geometry) is decided in ``_impl/lowering.py``, not here.
The functional API also takes formats with their spatial axes spelled out
(PyTorch's and TensorFlow's ``NCHW``, ``NHWC``, ``OIHW``...) where their count
matches the data, and its TypeError for a keyword it does not take says which
one the caller meant (``stride`` -> ``strides``): both tables are here.
"""

from __future__ import annotations

import difflib
import inspect
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import numpy as np

from . import registry as _registry

if TYPE_CHECKING:
    from typing_extensions import TypedDict

    class NoKeywords(TypedDict):
        """No keyword beyond a function's signature: the type of the ``**slips`` with
        which the public functions catch a keyword they do not take, to say which one
        the caller meant (``unexpected_keywords``). Type checkers then report such a
        keyword as they would without ``**slips``."""

AUTO_PADS = ("none", "same_upper", "same_lower", "valid")
DATA_FORMATS = ("NXC", "NCX")

#: Layout names with the spatial axes spelled out (PyTorch's NCHW and OIHW, TensorFlow's
#: NHWC and HWIO, ...) -> (the spec's name, where X stands for any spatial axes; how
#: many spatial axes the name has). W is 1-D, HW 2-D, DHW 3-D.
SPELLED_OUT: dict[str, tuple[str, int]] = {
    pattern.replace("X", axes): (pattern, rank)
    for rank, axes in ((1, "W"), (2, "HW"), (3, "DHW"))
    for pattern in DATA_FORMATS + ("OIX", "IOX", "XIO", "XOI")}

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
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}"
                         + _spelling_note(value, choices))
    return key


def check_format(name: str, value: Any, choices: Sequence[str], spatial_rank: int | None,
                 kind: str = "") -> str:
    """A data or weights format: one of `choices`, or the same layout with its spatial
    axes spelled out (``"NCHW"`` for ``"NCX"``) where their count is `spatial_rank`
    (None: unknown, and such names are refused); anything else is refused naming the
    spelling to use."""
    if value in choices:
        return str(value)
    spelled = SPELLED_OUT.get(value) if isinstance(value, str) else None
    if spelled is not None and spelled[0] in choices and spelled[1] == spatial_rank:
        return spelled[0]
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {_type_name(value)} {value!r}")
    raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}"
                     + _spelling_note(value, choices, spatial_rank, kind))


def _spelling_note(value: str, choices: Sequence[str], spatial_rank: int | None = None,
                   kind: str = "") -> str:
    """Why a layout name some other library uses is refused, and the spec's name of it;
    "" for any other value."""
    spelled = SPELLED_OUT.get(value.upper())
    if spelled is None:
        if value.upper() in choices:
            return f" (formats are upper case: {value.upper()!r})"
        return ""
    fmt, rank = spelled
    if value != value.upper():
        return f" (formats are upper case: {value.upper()!r}, which is {fmt!r} here)"
    axes = ", ".join(value[value.index("W") - rank + 1:value.index("W") + 1])
    if fmt not in choices:
        return (f" ({value!r} is {fmt!r} in the specification's spelling, where X stands for "
                f"the spatial axes, and {kind or 'this op'} does not take {fmt!r})")
    if spatial_rank is None:
        return (f" ({value!r} is {fmt!r} in the specification's spelling, where X stands for "
                "the spatial axes)")
    return (f" ({value!r} is {fmt!r} for {rank} spatial {'axis' if rank == 1 else 'axes'} "
            f"({axes}), but these tensors have {spatial_rank}: pass {fmt!r}, the spelling for "
            "any number of spatial axes)")


def spelled_formats(kind: str, attrs: dict[str, Any], spatial_rank: int) -> dict[str, Any]:
    """`attrs` with a spelled-out data or weights format (``"NCHW"``) replaced by the
    spec's name (``"NCX"``) where `normalize` takes it; anything else as it is (for
    callers that read the formats before ``normalize`` checks them)."""
    out = dict(attrs)
    for name, choices in (("data_format", DATA_FORMATS),
                          ("weights_format", _registry.SPECS[kind].weights_formats)):
        value = out.get(name)
        spelled = SPELLED_OUT.get(value) if isinstance(value, str) else None
        if spelled is not None and spelled[0] in choices and spelled[1] == spatial_rank:
            out[name] = spelled[0]
    return out


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
    ConvolutionBackwardData); a format may spell out `spatial_rank` spatial axes
    (``"NCHW"``, ``"IOHW"`` for 2: :data:`SPELLED_OUT`).
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
        data_format=check_format("data_format", data_format, DATA_FORMATS, spatial_rank, kind),
        weights_format=check_format("weights_format",
                                    formats[0] if weights_format is None else weights_format,
                                    formats, spatial_rank, kind))


def check_op_attrs(kind: str, attrs: Mapping[str, Any] | None,
                   spatial_rank: int | None) -> dict[str, Any]:
    """Check a low-level Op's attribute dict against the spec's schema.

    Unlike the functional API, the spec's required attributes must be given
    and lists are not broadcast. Returns the attributes normalized (lists as
    lists, auto_pad in lower case, formats as the spec spells them).
    `spatial_rank` is None when the inputs' rank is unknown; the lists must then
    agree with each other (and give it).
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
        # As in the functional API, NCHW for NCX where the rank is 2 (as auto_pad's case,
        # the spelling is normalized: the op and a saved graph hold NCX).
        "data_format": lambda v: check_format("data_format", v, DATA_FORMATS, spatial_rank, kind),
        "weights_format": lambda v: check_format("weights_format", v,
                                                 _registry.spec(kind).weights_formats,
                                                 spatial_rank, kind),
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


# --- keywords the public functions do not take, and what the caller meant ------------

_PADS_HINT = ("did you mean pads_begin= and pads_end=? PyTorch's padding=p is pads_begin=p, "
              "pads_end=p; onednn_graph.padding.from_torch converts its other forms, and "
              "onednn_graph.torch_like's conv_transpose1d/2d/3d take PyTorch's arguments as "
              "they are")
_SHAPE_WORDS = ("output_size", "output_shape", "out_shape", "input_size", "input_shape", "shape",
                "dst_shape", "weights_shape", "filter_shape", "weight_shape")
_TORCH_PADS_HINT = ("did you mean padding=? It takes an int (or one per axis), or one "
                    "(begin, end) pair per axis: padding=[(pads_begin, pads_end), ...]")
_TORCH_LAYOUT_HINT = ("torch_like takes PyTorch's layouts, input (N, C_in, *X) and weight "
                      "(C_in, C_out/groups, *K); for others call onednn_graph.conv_transpose "
                      "with data_format= and weights_format=")

#: The functional API's (``onednn_graph.ops``, ``compile_op``) answer to a keyword it does
#: not take, by the keyword: the name the caller meant where the function takes it (a
#: name, as the value), else a sentence. Value-dependent ones are in ``_ops_hint``.
OPS_KEYWORD_HINTS: dict[str, str] = {
    "stride": "strides", "dilation": "dilations", "dilation_rate": "dilations",
    "group": "groups", "num_groups": "groups", "feature_group_count": "groups",
    "pads": _PADS_HINT, "pad": _PADS_HINT,
    "layout": "data_format", "data_layout": "data_format", "format": "data_format",
    "memory_format": "data_format",
    "weight_format": "weights_format", "kernel_format": "weights_format",
    "filter_format": "weights_format", "weights_layout": "weights_format",
    "kernel_layout": "weights_format",
    "input": "src", "x": "src", "inputs": "src", "data": "src",
    "weight": "weights", "kernel": "weights", "filter": "weights", "filters": "weights",
    "w": "weights",
    "grad_output": "diff_dst", "output_grad": "diff_dst", "grad": "diff_dst", "dy": "diff_dst",
    "output": "out",
    "kernel_size": "the kernel size is the weights' shape, not a keyword",
    "kernel_shape": "the kernel size is the weights' shape, not a keyword",
    "dtype": ("the op runs in its inputs' dtype, not a keyword: convert the arrays "
              "(x.astype(np.float16), or ml_dtypes.bfloat16 for bf16)"),
    "threads": ("the functional API picks the thread count; onednn_graph.compile_op(..., "
                "threads=N) sets it"),
    "num_threads": ("the functional API picks the thread count; onednn_graph.compile_op(..., "
                    "threads=N) sets it"),
    "activation": "post_ops",
    "padding_mode": "the padding is zeros, as in PyTorch's transposed convolutions",
}

#: The same for ``onednn_graph.torch_like``, which takes PyTorch's arguments.
TORCH_KEYWORD_HINTS: dict[str, str] = {
    "strides": "stride", "dilations": "dilation", "group": "groups",
    "pads_begin": _TORCH_PADS_HINT, "pads_end": _TORCH_PADS_HINT, "pads": _TORCH_PADS_HINT,
    "auto_pad": 'did you mean padding="same" or padding="valid"?',
    "src": "input", "x": "input", "weights": "weight",
    "output_shape": "output_size", "dst_shape": "output_size",
    "data_format": _TORCH_LAYOUT_HINT, "weights_format": _TORCH_LAYOUT_HINT,
    "channels_last": _TORCH_LAYOUT_HINT, "memory_format": _TORCH_LAYOUT_HINT,
    "post_ops": ("onednn_graph.conv_transpose takes post_ops=; torch_like keeps to PyTorch's "
                 "arguments"),
    "quantize": ("onednn_graph.conv_transpose takes quantize=; torch_like keeps to PyTorch's "
                 "arguments"),
    "kernel_size": "the kernel size is the weight's shape, not a keyword",
    "output": "out",
}


def _ops_hint(function: str, name: str, value: Any, taken: Sequence[str]) -> str | None:
    """The hints that depend on the value given or on what `function` takes."""
    if name == "padding":
        if isinstance(value, str) and value.lower() == "valid":
            return "did you mean auto_pad='valid'?"
        if isinstance(value, str):
            return ("did you mean auto_pad='same_upper' (or 'same_lower')? torch_like's "
                    "padding='same' gives exactly stride * input")
        return _PADS_HINT
    if name in ("channels_last", "channels_first"):
        last = bool(value) == (name == "channels_last")
        return f"did you mean data_format={'NXC' if last else 'NCX'!r}?"
    if name == "bias" and "bias" not in taken:
        return (f"{function} takes no bias (only ConvTranspose does; a bias's gradient is "
                "diff_dst summed over every axis but the channels)")
    if name in _SHAPE_WORDS:
        shape_arg = next((n for n in taken if n in _SHAPE_WORDS), None)
        if shape_arg is not None:
            return f"did you mean {shape_arg}=? (the result's shape)"
        return ("the result's shape follows from the inputs and attributes: choose "
                "output_padding= (onednn_graph.torch_like's conv_transpose1d/2d/3d derive it "
                "from output_size=, as PyTorch does)")
    return None


def keyword_hint(function: str, name: str, value: Any, taken: Sequence[str], *,
                 torch: bool = False) -> str:
    """What the caller of `function` (which takes the keywords `taken`) meant by the
    keyword `name` it does not take: "did you mean strides=?", a sentence, or "" (a
    name neither the tables nor a close spelling explain)."""
    hint = None if torch else _ops_hint(function, name, value, taken)
    if hint is None:
        hint = (TORCH_KEYWORD_HINTS if torch else OPS_KEYWORD_HINTS).get(name)
    if hint is not None and not hint.isidentifier():
        return hint
    if hint is not None:  # the keyword's meaning, which this function may not have
        return f"did you mean {hint}=?" if hint in taken else f"{function} takes no {hint}"
    close = difflib.get_close_matches(name, taken, n=1)
    return f"did you mean {close[0]}=?" if close else ""


def unexpected_keywords(function: str, given: Mapping[str, Any], taken: Sequence[str], *,
                        torch: bool = False) -> TypeError:
    """The TypeError of a call to `function` with keywords `given` that it does not take
    (it takes `taken`): Python's words, and what the caller meant by each."""
    hints = {name: keyword_hint(function, name, value, taken, torch=torch)
             for name, value in given.items()}
    if len(hints) == 1:
        [(name, hint)] = hints.items()
        return TypeError(f"{function}() got an unexpected keyword argument {name!r}"
                         + (f"; {hint}" if hint else ""))
    return TypeError(f"{function}() got unexpected keyword arguments "
                     + "; ".join(f"{name!r}" + (f": {hint}" if hint else "")
                                 for name, hint in hints.items()))


F = TypeVar("F", bound=Callable[..., Any])


def slips_caught(function: F) -> F:
    """`function` itself (no wrapper: nothing more on the call path), shown with the
    signature it takes (``inspect``, ``help``, the API reference): its ``**slips``, typed
    to take nothing (:class:`NoKeywords`), only catches a keyword it does not take, for
    :func:`unexpected` to say which one the caller meant. An empty ``**slips`` costs the
    tiny functional call nothing measurable; a wrapper catching Python's own TypeError
    cost it 0.3 us of 5.6 (2-core AMD EPYC, Python 3.11)."""
    sig = inspect.signature(function)
    setattr(function, "__signature__", sig.replace(parameters=[
        p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]))
    return function


def unexpected(function: Callable[..., Any], slips: Mapping[str, Any], *,
               torch: bool = False) -> TypeError:
    """:func:`unexpected_keywords` for a `function` of :func:`slips_caught`, which takes
    the keywords of its signature; `torch` for ``onednn_graph.torch_like``'s."""
    return unexpected_keywords(function.__name__, slips,
                               tuple(inspect.signature(function).parameters), torch=torch)

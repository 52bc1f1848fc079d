"""Geometry of oneDNN 3.2's convolution-family Graph ops, in pure Python.

Output shapes, automatic padding and weight layouts of ``ConvTranspose``,
``ConvTransposeBackwardData``, ``ConvTransposeBackwardWeights`` and
``ConvolutionBackwardData`` (plus the forward ``Convolution``, used by the
reference and its tests), as the oneDNN **v3.2** sources compute them. Each
rule cites the source it restates. There is one deliberate exception: the
ConvTranspose backward ops resolve ``auto_pad`` and ``output_padding`` as their
ConvTranspose does, so that they are its exact gradients (see
:func:`resolve_pads`; ``native=True`` gives 3.2's own rule). ``interface/`` means
``src/graph/interface/``, ``backend/`` means ``src/graph/backend/dnnl/``.

Layouts are strings of axis letters. ``X`` stands for all spatial axes, in
order:

* data: ``NCX`` = ``(N, C, *X)``, ``NXC`` = ``(N, *X, C)``.
* weights of the ConvTranspose family (``ConvTranspose*``): the ``I`` axis holds
  ``C_in``, all channels of ConvTranspose's ``src``. The ``O`` axis holds
  ``C_out / groups``. So ``IOX`` = ``(C_in, C_out/g, *K)`` (PyTorch's
  transposed-convolution layout) and ``XOI`` = ``(*K, C_out/g, C_in)``. The
  published spec note says ``IOX`` is ``(C_in/g, C_out, *K)``, but that is
  wrong: see :func:`weights_channels`.
* weights of the convolution family (``ConvolutionBackwardData`` and the
  forward ``Convolution``): the ``O`` axis holds ``C_out``, the channels of
  ``diff_dst`` (``dst`` of the forward convolution). The ``I`` axis holds
  ``C_in / groups``. So ``OIX`` = ``(C_out, C_in/g, *K)`` and ``XIO`` =
  ``(*K, C_in/g, C_out)``.

In every family, two formats hold the same letters in a different order. So
converting between them is the axis permutation :func:`format_permutation`, as
``get_permutation`` in ``backend/common.cpp`` does it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, NoReturn, Optional, Sequence, Tuple

from ._impl import attrs as _attrs, registry as _registry

__all__ = [
    "KINDS",
    "LEGACY_KIND",
    "Plan",
    "axis_labels",
    "format_permutation",
    "data_spatial",
    "data_channels",
    "data_shape_for",
    "weights_spatial",
    "weights_channels",
    "weights_shape_for",
    "from_legacy_filter",
    "current_form",
    "effective_kernel",
    "conv_out_size",
    "conv_transpose_out_size",
    "resolve_pads",
    "split_same",
    "plan",
    "output_shape",
    "infer_weights_shape",
    "infer_dst_shape",
    "infer_output_shape",
]

Shape = Tuple[int, ...]

#: The four op kinds of the spec (``_impl.registry``).
KINDS = _registry.KINDS
#: Older name of ConvTransposeBackwardWeights (graph spec 0.x). It takes
#: ``filter_format``/``filter_shape``. See :func:`from_legacy_filter`.
LEGACY_KIND = _registry.LEGACY.kind


def _fail(message: str) -> NoReturn:
    raise ValueError(message)


# --------------------------------------------------------------------------
# layouts
# --------------------------------------------------------------------------


def axis_labels(fmt: str, ndim: int) -> Tuple[str, ...]:
    """Label every axis of an ``ndim``-d tensor in layout ``fmt``.

    ``X`` expands to ``X0, X1, ...``, one label per spatial axis.

    >>> axis_labels("NXC", 4)
    ('N', 'X0', 'X1', 'C')
    """
    nsp = ndim - (len(fmt) - 1)
    if nsp < 0 or "X" not in fmt:
        raise ValueError(f"layout {fmt!r} cannot describe a {ndim}-d tensor")
    labels = []
    for ch in fmt:
        labels.extend([f"X{i}" for i in range(nsp)] if ch == "X" else [ch])
    return tuple(labels)


def format_permutation(from_fmt: str, to_fmt: str, ndim: int) -> Tuple[int, ...]:
    """The axes to pass to ``numpy.transpose`` to go from ``from_fmt`` to ``to_fmt``.

    It moves axes letter by letter, as ``get_permutation`` in
    ``backend/common.cpp`` does when the library permutes NXC to NCX, or
    XOI/IOX/XIO to OIX.

    >>> format_permutation("XOI", "IOX", 4)
    (3, 2, 0, 1)
    """
    src, dst = axis_labels(from_fmt, ndim), axis_labels(to_fmt, ndim)
    if sorted(src) != sorted(dst):
        raise ValueError(f"layouts {from_fmt!r} and {to_fmt!r} hold different axes")
    return tuple(src.index(label) for label in dst)


def data_spatial(data_format: str, shape: Sequence[int]) -> Shape:
    """Spatial sizes of a ``src``/``dst`` shape (``get_src_spatial_dims``).

    >>> data_spatial("NXC", (2, 5, 7, 3))
    (5, 7)
    """
    shape = tuple(shape)
    return shape[1:-1] if data_format == "NXC" else shape[2:]


def data_channels(data_format: str, shape: Sequence[int]) -> int:
    """Channel count of a ``src``/``dst`` shape (``get_src_c``).

    >>> data_channels("NCX", (2, 3, 5))
    3
    """
    return shape[-1] if data_format == "NXC" else shape[1]


def data_shape_for(data_format: str, n: int, c: int, spatial: Sequence[int]) -> Shape:
    """Build a data shape (``make_data_dims`` in ``interface/shape_infer.cpp``).

    >>> data_shape_for("NXC", 2, 3, (5, 7))
    (2, 5, 7, 3)
    """
    spatial = tuple(spatial)
    return (n, *spatial, c) if data_format == "NXC" else (n, c, *spatial)


def _weights_io(weights_format: str, shape: Sequence[int]) -> Tuple[int, int]:
    """Extents of the ``I`` and ``O`` axes (``get_weight_i``/``get_weight_o``)."""
    labels = axis_labels(weights_format, len(shape))
    return shape[labels.index("I")], shape[labels.index("O")]


def weights_spatial(attrs: _attrs.ConvAttrs, weights_shape: Sequence[int]) -> Shape:
    """Kernel sizes K of a weights shape (``get_weight_spatial_dims``).

    >>> a = _attrs.normalize("ConvTranspose", 2, weights_format="XOI")
    >>> weights_spatial(a, (3, 5, 8, 4))
    (3, 5)
    """
    shape = tuple(weights_shape)
    return shape[:-2] if attrs.weights_format.startswith("X") else shape[2:]


def weights_channels(attrs: _attrs.ConvAttrs, weights_shape: Sequence[int]) -> Tuple[int, int]:
    """Total ``(C_in, C_out)`` that a weights shape describes.

    ConvTranspose family: ``C_in = I`` and ``C_out = O * groups``. The checks
    ``diff_dst.C / g == weight_o`` (infer_convtranspose_bprop_data_output_shape)
    and ``dst.C = weight_o * g`` (infer_convtranspose_output_shape) show it.
    So does the grouping in ``backend/layout_propagator.cpp``: for a
    ConvTranspose, dnnl_to_group transposes the OIX weights
    ``(C_out/g, C_in, *K)`` to ``(C_in, C_out/g, *K)`` and then splits the
    leading C_in axis into groups.

    Convolution family: ``C_in = I * groups`` (``src.C / g == weight_i``) and
    ``C_out = O`` (infer_conv_output_shape).

    >>> a = _attrs.normalize("ConvTranspose", 1, groups=2, weights_format="IOX")
    >>> weights_channels(a, (4, 3, 5))
    (4, 6)
    """
    i, o = _weights_io(attrs.weights_format, weights_shape)
    g = attrs.groups
    return (i, o * g) if _registry.SPECS[attrs.kind].transposed else (i * g, o)


def weights_shape_for(
    attrs: _attrs.ConvAttrs, c_in: int, c_out: int, kernel: Sequence[int]
) -> Shape:
    """Weights shape in ``attrs.weights_format`` for total channels and kernel.

    This is the inverse of :func:`weights_channels`. For the ConvTranspose
    family, ``c_in``/``c_out`` are the channels of ConvTranspose's src/dst.
    For the convolution family, they are the channels of the forward
    convolution's src/dst. ``groups`` must divide both.

    >>> a = _attrs.normalize("ConvolutionBackwardData", 2, groups=2, weights_format="XIO")
    >>> weights_shape_for(a, 4, 6, (3, 3))
    (3, 3, 2, 6)
    """
    g = attrs.groups
    for name, c in (("c_in", c_in), ("c_out", c_out)):
        if c % g:
            _fail(f"groups ({g}) must divide {name} ({c})")
    i, o = (c_in, c_out // g) if _registry.SPECS[attrs.kind].transposed else (c_in // g, c_out)
    extent = {"I": (i,), "O": (o,), "X": tuple(kernel)}
    return tuple(d for ch in attrs.weights_format for d in extent[ch])


def from_legacy_filter(
    filter_format: str, filter_shape: Optional[Sequence[int]] = None
) -> Tuple[str, Optional[Shape]]:
    """Turn legacy ``ConvTransposeBackpropFilters`` filter attributes into current ones.

    Legacy ``OIX`` = ``(C_out/g, C_in, *K)`` maps to ``IOX``. Legacy ``XIO`` =
    ``(*K, C_in, C_out/g)`` maps to ``XOI``. The letters mean the same in both
    (``_impl.registry.LEGACY``), so the shape is permuted letter by letter, and a
    legacy filter is the current weights with the two channel axes swapped.

    >>> from_legacy_filter("OIX", (3, 4, 5))
    ('IOX', (4, 3, 5))
    """
    formats = _registry.LEGACY.formats
    if filter_format not in formats:
        _fail(f"filter_format must be {' or '.join(map(repr, formats))}, got {filter_format!r}")
    weights_format = formats[filter_format]
    if filter_shape is None:
        return weights_format, None
    shape = tuple(filter_shape)
    perm = format_permutation(filter_format, weights_format, len(shape))
    return weights_format, tuple(shape[p] for p in perm)


# --------------------------------------------------------------------------
# per-axis arithmetic
# --------------------------------------------------------------------------


def effective_kernel(k: int, d: int) -> int:
    """Extent of a kernel of ``k`` taps at dilation ``d``: ``(k - 1) * d + 1``."""
    return (k - 1) * d + 1


def conv_out_size(x: int, k: int, s: int, d: int, pb: int, pe: int) -> int:
    """Convolution output size ``floor((x + pb + pe - ek) / s) + 1``.

    This is infer_conv_ncx_oix and infer_convtranspose_ncx_oix in
    ``interface/shape_infer.cpp``. oneDNN's convolution/deconvolution
    primitives check the same relation. Python's floor and C++'s truncation
    agree whenever the result is >= 1.

    >>> conv_out_size(7, 3, 2, 1, 1, 1)
    4
    """
    return (x + pb + pe - effective_kernel(k, d)) // s + 1


def conv_transpose_out_size(x: int, k: int, s: int, d: int, pb: int, pe: int, op: int = 0) -> int:
    """ConvTranspose output size ``s*(x-1) + ek - pb - pe + op``.

    This is infer_convtranspose_output_shape in ``interface/shape_infer.cpp``.

    >>> conv_transpose_out_size(3, 2, 2, 2, 1, 2, 1)
    5
    """
    return s * (x - 1) + effective_kernel(k, d) - pb - pe + op


def _axis_pads(attrs: _attrs.ConvAttrs, axis: int, in_size: int, k: int,
               native: bool = False) -> Tuple[int, int]:
    """(pad_begin, pad_end) of one spatial axis: infer_auto_pad in interface/shape_infer.cpp."""
    if attrs.auto_pad == "none":
        return attrs.pads_begin[axis], attrs.pads_end[axis]
    if attrs.auto_pad == "valid":
        return 0, 0
    s = attrs.strides[axis]
    ek = effective_kernel(k, attrs.dilations[axis])
    # is_deconv=true is passed only by infer_convtranspose_output_shape
    # (ConvTranspose itself); the input size plays no part then. 3.2's
    # backward ops resolve SAME with the convolution rule on diff_dst instead
    # (native=True), which disagrees with their own forward op whenever
    # diff_dst % s != 0 (e.g. after output_padding). The package resolves all
    # three as ConvTranspose does and passes explicit pads (_impl/lowering.py), so
    # ConvTranspose and its gradients stay adjoint.
    spec = _registry.SPECS[attrs.kind]
    deconv = spec.primitive == "deconvolution_forward" if native else spec.transposed
    if deconv:
        total = ek - s
    else:
        total = ek - (in_size % s or s)
    return split_same(max(total, 0), attrs.auto_pad)


def split_same(total: int, auto_pad: str) -> Tuple[int, int]:
    """``(begin, end)`` halves of a SAME padding ``total`` (infer_auto_pad).

    ``same_lower`` puts the odd unit at the beginning, ``same_upper`` at the
    end (ONNX's SAME_LOWER / SAME_UPPER place it the same way).

    >>> split_same(3, "same_upper"), split_same(3, "same_lower")
    ((1, 2), (2, 1))
    """
    begin = (total + 1) // 2 if auto_pad == "same_lower" else total // 2
    return begin, total - begin


def resolve_pads(
    attrs: _attrs.ConvAttrs, in_spatial: Sequence[int], kernel_spatial: Sequence[int],
    *, native: bool = False,
) -> Tuple[Shape, Shape]:
    """Explicit ``(pads_begin, pads_end)`` for ``attrs``, after ``auto_pad``.

    With ``auto_pad="none"``, the attribute pads are returned unchanged.
    Otherwise they are ignored and recomputed per axis with infer_auto_pad's
    arithmetic (``interface/shape_infer.cpp``). ``valid`` gives zero padding.
    ``same_*`` pads a total of ``max(0, ek - r)``, where ``ek = (K-1)*d + 1``.
    ``same_lower`` puts the odd unit first, ``same_upper`` last. ``r`` and
    ``in_spatial`` depend on the op kind. With ``native=True``, the rule is
    oneDNN 3.2's own: each shape-inference function passes its own input.
    By default, it is the package's rule: the ConvTranspose backward ops pad
    as their ConvTranspose does, so they stay its exact gradients.

    ============================  ======================  ================  ================
    kind                          ``in_spatial``          ``r`` package     ``r`` native
    ============================  ======================  ================  ================
    ConvTranspose                 src (not used)          ``s``             ``s``
    ConvTransposeBackwardData     diff_dst (not used)     ``s``             ``in % s or s``
    ConvTransposeBackwardWeights  diff_dst (input #1)     ``s``             ``in % s or s``
    ConvolutionBackwardData       ``dst_shape``           ``in % s or s``   ``in % s or s``
    Convolution (forward)         src                     ``in % s or s``   ``in % s or s``
    ============================  ======================  ================  ================

    (``r = s`` is infer_auto_pad's ``is_deconv=true`` branch; ``in_spatial`` is
    the spatial size of the named tensor.)

    The two rules agree when diff_dst is the output of a ConvTranspose with
    ``same_*`` padding and no output_padding. They differ otherwise, e.g. when
    diff_dst has an odd size and the stride is 2.

    >>> a = _attrs.normalize("ConvTranspose", 1, strides=2, auto_pad="same_lower")
    >>> resolve_pads(a, (3,), (3,))
    ((1,), (0,))
    >>> a = _attrs.normalize("ConvTransposeBackwardData", 1, strides=2, auto_pad="same_lower")
    >>> resolve_pads(a, (3,), (3,)), resolve_pads(a, (3,), (3,), native=True)
    (((1,), (0,)), ((1,), (1,)))
    """
    pairs = [
        _axis_pads(attrs, i, x, k, native)
        for i, (x, k) in enumerate(zip(in_spatial, kernel_spatial))
    ]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


# --------------------------------------------------------------------------
# whole-op geometry
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Plan:
    """Resolved geometry of one op call, as returned by :func:`plan`.

    ``attrs``: the normalized attributes. ``kernel``: the kernel sizes K.
    ``pads_begin``/``pads_end``: the explicit pads after auto_pad
    (:func:`resolve_pads`, package rule). ``output_padding`` is not folded into
    them. ``output_shape``: the output shape in the op's output layout.
    """

    attrs: _attrs.ConvAttrs
    kernel: Shape
    pads_begin: Shape
    pads_end: Shape
    output_shape: Shape


def _as_shape(name: str, shape: Any, rank: Optional[int] = None) -> Shape:
    try:
        dims = tuple(int(d) for d in shape)
        ok = all(d == v for d, v in zip(dims, shape))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise TypeError(f"{name} must be a sequence of ints, got {shape!r}")
    if any(d < 1 for d in dims):
        _fail(f"{name} {dims}: every dimension must be >= 1")
    if rank is not None and len(dims) != rank:
        _fail(f"{name} {dims} must have rank {rank} (like the data tensors)")
    return dims


def _check_groups(g: int, what: str, channels: int) -> None:
    if channels % g:
        _fail(f"groups ({g}) must divide {what} ({channels})")


def _check_batch(a: str, sa: Shape, b: str, sb: Shape) -> None:
    if sa[0] != sb[0]:
        _fail(f"{a} and {b} must have the same batch size N, got {sa[0]} and {sb[0]}")


def _positive_output(kind: str, spatial: Sequence[int]) -> None:
    if any(v < 1 for v in spatial):
        _fail(f"{kind}: the output spatial size {tuple(spatial)} is empty; check the "
              "kernel, strides, dilations and pads")


def _convolution_geometry(a: _attrs.ConvAttrs, src_name: str, src: Shape, diff_dst: Shape,
                          weights_name: str, weights: Shape) -> Tuple[Shape, Shape, Shape]:
    """(kernel, pads_begin, pads_end) of a convolution from `src` to `diff_dst` over
    `weights`, after checking that they fit: the shared part of
    ConvolutionBackwardData (src = dst_shape) and ConvolutionBackwardWeights
    (weights = weights_shape)."""
    fmt, g = a.data_format, a.groups
    i, o = _weights_io(a.weights_format, weights)
    c_src, c_dd = data_channels(fmt, src), data_channels(fmt, diff_dst)
    if o != c_dd:
        _fail(f"{weights_name} {weights}: the O axis ({o}) must equal the channels of diff_dst "
              f"({c_dd}); in {a.weights_format} the O axis holds C_out")
    _check_groups(g, "the channels of diff_dst", c_dd)
    if i * g != c_src:
        _fail(f"{weights_name} {weights}: the I axis ({i}) times groups ({g}) must equal the "
              f"channels of {src_name} ({c_src}); the I axis holds C_in/groups")
    kernel = weights_spatial(a, weights)
    x_sp, y_sp = data_spatial(fmt, src), data_spatial(fmt, diff_dst)
    pb, pe = resolve_pads(a, x_sp, kernel)  # the forward convolution's rule, on src
    for ax, (x, y, k, s, d) in enumerate(zip(x_sp, y_sp, kernel, a.strides, a.dilations)):
        if conv_out_size(x, k, s, d, pb[ax], pe[ax]) != y:
            _fail(f"spatial axis {ax}: {src_name} size {x} and diff_dst size {y} do "
                  f"not fit kernel {k} (stride {s}, dilation {d}, pads "
                  f"{pb[ax]}/{pe[ax]}); a convolution of {src_name} must give diff_dst")
    return kernel, pb, pe


def plan(kind: str, input_shapes: Sequence[Sequence[int]], **attrs: Any) -> Plan:
    """Check an op call and resolve its geometry.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`, or ``"Convolution"`` (the forward convolution).
    input_shapes : sequence of shapes
        The op's input shapes in spec order. ConvTranspose: src, weights[, bias].
        ConvTransposeBackwardData: diff_dst, weights. ConvTransposeBackwardWeights:
        src, diff_dst. ConvolutionBackwardData: diff_dst, weights.
    **attrs
        Spec attribute names. ``weights_shape`` (ConvTransposeBackwardWeights) or
        ``dst_shape`` (ConvolutionBackwardData) is the output shape and is
        required for those kinds. The rest go to ``_attrs.normalize``.

    Raises
    ------
    ValueError
        On inconsistent channels, groups, batch or geometry, or a missing
        ``weights_shape``/``dst_shape``.

    Examples
    --------
    >>> p = plan("ConvTranspose", [(1, 4, 3), (4, 2, 2)], strides=2,
    ...          data_format="NCX", weights_format="IOX", groups=2)
    >>> p.output_shape, p.pads_begin
    ((1, 4, 6), (0,))
    """
    try:
        return _planned(kind, input_shapes, **attrs)
    except ValueError as exc:
        hint = _layout_hint(kind, input_shapes, attrs, str(exc))
        if not hint:
            raise
        raise ValueError(f"{exc}; {hint}") from None


def _layout_hint(kind: str, input_shapes: Sequence[Sequence[int]], attrs: Mapping[str, Any],
                 message: str) -> str:
    """For channels that disagree, the format arguments under which these shapes would
    agree, fewest changes first (NCX data passed with the default NXC, IOX weights
    with the default XOI: the error alone did not say which argument to pass), or ""."""
    if "channels" not in message or kind not in _registry.SPECS:
        return ""
    given = {"data_format": str(attrs.get("data_format", _attrs.DATA_FORMATS[0])).upper(),
             "weights_format": str(attrs.get("weights_format",
                                             _registry.SPECS[kind].weights_formats[0])).upper()}
    others = [{"data_format": d, "weights_format": w} for d in _attrs.DATA_FORMATS
              for w in _registry.SPECS[kind].weights_formats]
    for formats in sorted(others, key=lambda f: sum(f[k] != given[k] for k in f)):
        changed = {k: v for k, v in formats.items() if v != given[k]}
        if not changed:
            continue
        try:
            _planned(kind, input_shapes, **{**attrs, **formats})
        except ValueError:
            continue
        spelled = " and ".join(f"{k}={v!r}" for k, v in changed.items())
        them = "it" if len(changed) == 1 else "them"
        return f"the channels would agree with {spelled}: pass {them} if the arrays are laid out that way"
    return ""


def _missing_batch_axis(kind: str, names: Sequence[str], input_shapes: Sequence[Sequence[int]],
                        attrs: Mapping[str, Any]) -> None:
    """A first input one axis short of the second (the weights, or the backward weights'
    diff_dst) that fits once given a batch axis lost it (``x[0]``); say so rather than
    blame the second's rank."""
    if len(input_shapes) < 2:
        return
    data, other = input_shapes[0], input_shapes[1]
    if len(data) + 1 != len(other):
        return
    try:
        _planned(kind, [(1, *data), *input_shapes[1:]], **attrs)
    except (TypeError, ValueError):
        return  # not only the batch axis: the rank check below says what it can
    _fail(f"{names[0]} {tuple(data)} has rank {len(data)} but {names[1]} {tuple(other)} "
          f"rank {len(other)}: {names[0]} is missing its batch axis N (for one "
          f"sample, pass {names[0]}[None])")


def _planned(kind: str, input_shapes: Sequence[Sequence[int]], **attrs: Any) -> Plan:
    """``plan`` without the layout hint."""
    if kind not in _registry.SPECS:
        _fail(f"unknown op kind {kind!r}; expected one of {KINDS}")
    spec = _registry.SPECS[kind]
    names = spec.inputs
    input_shapes = list(input_shapes)
    if not spec.required <= len(input_shapes) <= len(names):
        _fail(f"{kind} takes inputs {names}, got {len(input_shapes)} shapes")
    first = _as_shape(names[0], input_shapes[0])
    _missing_batch_axis(kind, names, input_shapes, attrs)
    rank = len(first)
    if rank < 3:
        _fail(f"{names[0]} {first} must have rank >= 3 (N, C and at least one spatial axis)")
    kw = dict(attrs)
    given_out = kw.pop(spec.shape_attr, None) if spec.shape_attr else None
    a = _attrs.normalize(kind, rank - 2, **kw)
    shapes = [first] + [
        _as_shape(n, s, 1 if n == "bias" else rank) for n, s in zip(names[1:], input_shapes[1:])
    ]
    return _OUTPUT_RULES[spec.primitive](kind, a, shapes, given_out)


# Each op's geometry is that of the primitive oneDNN 3.2's Graph backend builds for it
# (the registry's ``OpSpec.primitive``): the rules below, one per primitive, are the
# only place this module tells the ops apart. Each takes the op kind (for messages),
# the normalized attributes, the input shapes and the shape attribute's value.


def _needs(kind: str, given_out: Any, what: str) -> None:
    if given_out is None:
        _fail(f"{kind} needs {what}")


def _transposed_weights_gradient(kind: str, a: _attrs.ConvAttrs, shapes: list[Shape],
                                 given_out: Any) -> Plan:
    """deconvolution_backward_weights (ConvTransposeBackwardWeights)."""
    src, diff_dst = shapes
    fmt, g = a.data_format, a.groups
    _needs(kind, given_out, "weights_shape= (the shape of diff_weights in weights_format "
           f"{a.weights_format!r}); shapes.infer_weights_shape derives it when it is unique")
    ws = _as_shape("weights_shape", given_out, len(src))
    _check_batch("src", src, "diff_dst", diff_dst)
    i, o = _weights_io(a.weights_format, ws)
    c_src, c_dd = data_channels(fmt, src), data_channels(fmt, diff_dst)
    _check_groups(g, "the channels of src", c_src)
    _check_groups(g, "the channels of diff_dst", c_dd)
    if i != c_src:
        _fail(f"weights_shape {ws}: the I axis ({i}) must equal the channels of src "
              f"({c_src}); in {a.weights_format} the I axis holds C_in")
    if o * g != c_dd:
        _fail(f"weights_shape {ws}: the O axis ({o}) times groups ({g}) must equal "
              f"the channels of diff_dst ({c_dd}); the O axis holds C_out/groups")
    kernel = weights_spatial(a, ws)
    x_sp, y_sp = data_spatial(fmt, src), data_spatial(fmt, diff_dst)
    pb, pe = resolve_pads(a, y_sp, kernel)
    # deconvolution_backward_weights requires (Y - ek + pb + pe)/s + 1 == X
    # (src/common/deconvolution.cpp, deconv_desc_init). output_padding is
    # that of the forward ConvTranspose: it extends diff_dst, so it counts
    # as pads_end - output_padding (how _impl/lowering.py hands it to 3.2).
    sizes = zip(a.strides, a.dilations, a.output_padding)
    for ax, (x, y, k, (s, d, op)) in enumerate(zip(x_sp, y_sp, kernel, sizes)):
        if conv_out_size(y, k, s, d, pb[ax], pe[ax] - op) != x:
            _fail(f"spatial axis {ax}: src size {x} and diff_dst size {y} do not fit "
                  f"kernel {k} (stride {s}, dilation {d}, pads {pb[ax]}/{pe[ax]}, "
                  f"output_padding {op}); oneDNN requires "
                  "floor((Y + pb + pe - op - (K-1)*d - 1) / s) + 1 == X")
    return Plan(a, kernel, pb, pe, ws)


def _convolution_weights_gradient(kind: str, a: _attrs.ConvAttrs, shapes: list[Shape],
                                  given_out: Any) -> Plan:
    """convolution_backward_weights (what some calls run as: _impl.lowering)."""
    src, diff_dst = shapes
    _needs(kind, given_out, "weights_shape= (the shape of diff_weights in weights_format "
           f"{a.weights_format!r})")
    ws = _as_shape("weights_shape", given_out, len(src))
    _check_batch("src", src, "diff_dst", diff_dst)
    kernel, pb, pe = _convolution_geometry(a, "src", src, diff_dst, "weights_shape", ws)
    return Plan(a, kernel, pb, pe, ws)


def _convolution_data_gradient(kind: str, a: _attrs.ConvAttrs, shapes: list[Shape],
                               given_out: Any) -> Plan:
    """convolution_backward_data (ConvolutionBackwardData)."""
    diff_dst, w = shapes
    _needs(kind, given_out, "dst_shape= (the shape of the forward convolution's src, i.e. "
           "of diff_src); shapes.infer_dst_shape derives it when it is unique")
    dst = _as_shape("dst_shape", given_out, len(diff_dst))
    _check_batch("diff_dst", diff_dst, "dst_shape", dst)
    # infer_conv_bprop_data_output_shape pads with dst_shape's spatial sizes.
    # output_padding is never read: the 3.2 library ignores it here.
    kernel, pb, pe = _convolution_geometry(a, "dst_shape", dst, diff_dst, "weights", w)
    return Plan(a, kernel, pb, pe, dst)


def _from_data_and_weights(kind: str, a: _attrs.ConvAttrs, data: Shape, w: Shape, channels: int,
                           size: Callable[..., int]) -> Plan:
    """The plan of an op whose output follows from its data and weights alone:
    `channels` output channels, each spatial size `size(x, k, s, d, pb, pe, op)`."""
    fmt = a.data_format
    kernel = weights_spatial(a, w)
    x_sp = data_spatial(fmt, data)
    pb, pe = resolve_pads(a, x_sp, kernel)
    out = [size(*args) for args in zip(x_sp, kernel, a.strides, a.dilations, pb, pe,
                                        a.output_padding)]
    _positive_output(kind, out)
    return Plan(a, kernel, pb, pe, data_shape_for(fmt, data[0], channels, out))


def _transposed(kind: str, a: _attrs.ConvAttrs, shapes: list[Shape], given_out: Any) -> Plan:
    """deconvolution_forward (ConvTranspose)."""
    src, w = shapes[0], shapes[1]
    g = a.groups
    i, o = _weights_io(a.weights_format, w)
    c = data_channels(a.data_format, src)
    if i != c:
        _fail(f"weights {w}: the I axis ({i}) must equal the channels of src ({c}); "
              f"in {a.weights_format} the I axis holds C_in, all src channels")
    _check_groups(g, "the channels of src", c)
    c_out = o * g
    if len(shapes) == 3 and shapes[2] != (c_out,):
        _fail(f"bias {shapes[2]} must have shape ({c_out},): one value per dst "
              f"channel (O axis {o} x groups {g})")
    return _from_data_and_weights(kind, a, src, w, c_out, conv_transpose_out_size)


def _transposed_data_gradient(kind: str, a: _attrs.ConvAttrs, shapes: list[Shape],
                              given_out: Any) -> Plan:
    """deconvolution_backward_data (ConvTransposeBackwardData)."""
    diff_dst, w = shapes
    g = a.groups
    i, o = _weights_io(a.weights_format, w)
    c = data_channels(a.data_format, diff_dst)
    if o * g != c:
        _fail(f"weights {w}: the O axis ({o}) times groups ({g}) must equal the "
              f"channels of diff_dst ({c}); in {a.weights_format} the O axis holds "
              "C_out/groups")
    _check_groups(g, "the weights' I axis (C_in)", i)
    # infer_convtranspose_bprop_data_output_shape: the forward-conv formula
    # applied to diff_dst. output_padding is the forward ConvTranspose's,
    # so it counts as pads_end - output_padding (see the weights gradient's rule).
    return _from_data_and_weights(kind, a, diff_dst, w, i, lambda x, k, s, d, p0, p1, op:
                                  conv_out_size(x, k, s, d, p0, p1 - op))


def _convolution(kind: str, a: _attrs.ConvAttrs, shapes: list[Shape], given_out: Any) -> Plan:
    """convolution_forward (the forward Convolution: the reference and lowerings)."""
    src, w = shapes[0], shapes[1]
    g = a.groups
    i, o = _weights_io(a.weights_format, w)
    c = data_channels(a.data_format, src)
    if i * g != c:
        _fail(f"weights {w}: the I axis ({i}) times groups ({g}) must equal the "
              f"channels of src ({c}); the I axis holds C_in/groups")
    _check_groups(g, "the weights' O axis (C_out)", o)
    if len(shapes) == 3 and shapes[2] != (o,):
        _fail(f"bias {shapes[2]} must have shape ({o},): one value per dst channel")
    return _from_data_and_weights(kind, a, src, w, o, lambda x, k, s, d, p0, p1, _:
                                  conv_out_size(x, k, s, d, p0, p1))


#: The registry's ``OpSpec.primitive`` -> the geometry of the ops built as it.
_OUTPUT_RULES: dict[str, Callable[[str, _attrs.ConvAttrs, list[Shape], Any], Plan]] = {
    "deconvolution_forward": _transposed,
    "deconvolution_backward_data": _transposed_data_gradient,
    "deconvolution_backward_weights": _transposed_weights_gradient,
    "convolution_forward": _convolution,
    "convolution_backward_data": _convolution_data_gradient,
    "convolution_backward_weights": _convolution_weights_gradient,
}


def output_shape(kind: str, input_shapes: Sequence[Sequence[int]], **attrs: Any) -> Shape:
    """Output shape of one op, checked the way oneDNN 3.2 checks it.

    ``kind`` is one of :data:`KINDS`, or :data:`LEGACY_KIND` with its legacy
    attributes ``filter_format`` (``XIO``/``OIX``, default ``XIO``) and
    ``filter_shape``. The result is then in the legacy layout (see
    :func:`from_legacy_filter`). See :func:`plan` for the arguments.

    >>> output_shape("ConvTransposeBackwardData", [(1, 1, 6), (1, 1, 2)], strides=2,
    ...              data_format="NCX", weights_format="IOX")
    (1, 1, 3)
    """
    if kind not in KINDS and kind != LEGACY_KIND:
        _fail(f"unknown op kind {kind!r}; expected one of {KINDS} or {LEGACY_KIND!r}")
    current, kw, filter_format = current_form(kind, attrs)
    result = plan(current, input_shapes, **kw).output_shape
    if filter_format is None:
        return result
    perm = format_permutation(kw["weights_format"], filter_format, len(result))
    return tuple(result[p] for p in perm)


def current_form(kind: str, attrs: Mapping[str, Any]) -> Tuple[str, dict, Optional[str]]:
    """`kind` and `attrs` in the current op's terms, and the legacy filter_format
    (None for every op but the legacy ConvTransposeBackpropFilters, which becomes
    ConvTransposeBackwardWeights: attribute names, format and the filter_shape's
    axes mapped by :func:`from_legacy_filter`).

    >>> current_form("ConvTransposeBackpropFilters", {"filter_format": "OIX",
    ...              "filter_shape": [3, 4, 5], "strides": [2]})
    ('ConvTransposeBackwardWeights', {'strides': [2], 'weights_format': 'IOX', 'weights_shape': (4, 3, 5)}, 'OIX')
    """
    if kind != LEGACY_KIND:
        return kind, dict(attrs), None
    legacy = _registry.LEGACY
    kw = dict(attrs)
    filter_format = _attrs.check_choice("filter_format", kw.pop("filter_format", legacy.default_format),
                                        tuple(legacy.formats))
    shape = kw.pop("filter_shape", None)
    kw["weights_format"], ws = from_legacy_filter(filter_format, shape)
    if ws is not None:
        kw["weights_shape"] = ws
    return legacy.current, kw, filter_format


def _unique(what: str, ax: int, candidates: Sequence[int], ask: str) -> int:
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        _fail(f"spatial axis {ax}: no {what} fits these shapes and attributes; {ask}")
    shown = ", ".join(map(str, candidates[:8])) + (", ..." if len(candidates) > 8 else "")
    _fail(f"spatial axis {ax}: the {what} is ambiguous (candidates: {shown}); {ask}")


def infer_weights_shape(src_shape: Sequence[int], diff_dst_shape: Sequence[int], **attrs: Any) -> Shape:
    """``weights_shape`` for ConvTransposeBackwardWeights when it is unique.

    The library never infers this (infer_conv_bprop_filters_output_shape_common
    requires the attribute). Here, per axis, K is the size with
    ``Y == s*(X-1) + (K-1)*d + 1 - pb - pe + output_padding``, the exact
    ConvTranspose geometry. ``pb``/``pe`` come from auto_pad on diff_dst's size,
    so they can depend on K. The value is returned when exactly one ``K >= 1``
    fits. If none fits, or several do (e.g. ``same_*`` padding cancels K),
    ValueError asks for ``weights_shape``. The library itself also accepts a K
    that fits only ``floor((Y + pb + pe - ek)/s) + 1 == X``, an implicit
    output padding below the stride. Such a K must be passed explicitly.

    >>> infer_weights_shape((1, 1, 3), (1, 2, 7), strides=2, data_format="NCX",
    ...                     weights_format="IOX")
    (1, 2, 3)
    """
    src = _as_shape("src", src_shape)
    rank = len(src)
    dd = _as_shape("diff_dst", diff_dst_shape, rank)
    a = _attrs.normalize("ConvTransposeBackwardWeights", rank - 2, **attrs)
    fmt, ask = a.data_format, "pass weights_shape="
    kernel = []
    for ax, (x, y) in enumerate(zip(data_spatial(fmt, src), data_spatial(fmt, dd))):
        s, d, op = a.strides[ax], a.dilations[ax], a.output_padding[ax]
        pb, pe = a.pads_begin[ax], a.pads_end[ax]
        # Y = s*(X-1) + ek - pads + op with pads >= min(0, pb + pe), so ek <= bound.
        k_max = (y + s + abs(pb) + abs(pe) + op) // d + 2
        fits = [k for k in range(1, k_max + 1)
                if conv_transpose_out_size(x, k, s, d, *_axis_pads(a, ax, y, k), op) == y]
        kernel.append(_unique("kernel size", ax, fits, ask))
    c_in, c_out = data_channels(fmt, src), data_channels(fmt, dd)
    ws = weights_shape_for(a, c_in, c_out, kernel)
    plan("ConvTransposeBackwardWeights", [src, dd], weights_shape=ws, **attrs)  # full check
    return ws


def infer_dst_shape(diff_dst_shape: Sequence[int], weights_shape: Sequence[int], **attrs: Any) -> Shape:
    """``dst_shape`` for ConvolutionBackwardData when it is unique.

    The library never infers this (infer_conv_bprop_data_output_shape requires
    ``dst_shape``). Here, per axis, X is the size with
    ``floor((X + pb + pe - (K-1)*d - 1) / s) + 1 == Y``, the forward
    convolution's geometry. ``pb``/``pe`` come from auto_pad on X itself. With
    ``s > 1``, several X usually fit (the division drops the remainder), and
    ValueError lists them and asks for ``dst_shape``.

    >>> infer_dst_shape((1, 2, 5), (2, 3, 3), data_format="NCX", weights_format="OIX")
    (1, 3, 7)
    """
    dd = _as_shape("diff_dst", diff_dst_shape)
    rank = len(dd)
    w = _as_shape("weights", weights_shape, rank)
    a = _attrs.normalize("ConvolutionBackwardData", rank - 2, **attrs)
    fmt, kernel = a.data_format, weights_spatial(a, w)
    spatial = []
    for ax, (y, k) in enumerate(zip(data_spatial(fmt, dd), kernel)):
        s, d = a.strides[ax], a.dilations[ax]
        pb, pe = a.pads_begin[ax], a.pads_end[ax]
        x_max = s * y + effective_kernel(k, d) + abs(pb) + abs(pe)
        fits = [x for x in range(1, x_max + 1)
                if conv_out_size(x, k, s, d, *_axis_pads(a, ax, x, k)) == y]
        spatial.append(_unique("dst spatial size", ax, fits, "pass dst_shape="))
    c_in, _ = weights_channels(a, w)
    dst = data_shape_for(fmt, dd[0], c_in, spatial)
    plan("ConvolutionBackwardData", [dd, w], dst_shape=dst, **attrs)  # full check
    return dst


def infer_output_shape(kind: str, input_shapes: Sequence[Sequence[int]], **attrs: Any) -> Shape:
    """The shape attribute of `kind` (``weights_shape`` of ConvTransposeBackwardWeights,
    ``dst_shape`` of ConvolutionBackwardData) where the other arguments determine it:
    :func:`infer_weights_shape`, :func:`infer_dst_shape`.

    >>> infer_output_shape("ConvolutionBackwardData", [(1, 1, 4), (1, 1, 3)],
    ...                    data_format="NCX", weights_format="OIX")
    (1, 1, 6)
    """
    spec = _registry.SPECS.get(kind)
    infer = _INFERRED.get(spec.primitive) if spec else None
    if infer is None:
        _fail(f"{kind} has no shape attribute to infer")
    return infer(input_shapes[0], input_shapes[1], **attrs)


#: The registry's ``OpSpec.primitive`` -> how its ops' shape attribute is inferred.
_INFERRED: dict[str, Callable[..., Shape]] = {
    "deconvolution_backward_weights": infer_weights_shape,
    "convolution_backward_data": infer_dst_shape,
}


def __dir__() -> list[str]:
    return list(__all__)

"""Padding of a transposed convolution in the PyTorch, JAX, ONNX and oneDNN conventions.

Every convention is converted to one explicit form, :class:`Pads`: oneDNN's
``pads_begin``, ``pads_end`` and ``output_padding`` per spatial axis. For one
axis with input size ``x``, kernel ``k``, stride ``s``, dilation ``d`` and
``ek = (k-1)*d + 1``, the transposed convolution scatters into a "full" output
of ``s*(x-1) + ek`` elements; ``pads_begin``/``pads_end`` crop that many from
each end and ``output_padding`` appends elements (which receive only the bias)::

    output = s*(x-1) + ek - pads_begin - pads_end + output_padding

How the conventions say it
--------------------------
=========  ======================================================================
oneDNN     ``pads_begin``, ``pads_end``, ``output_padding`` as above; or
           ``auto_pad`` = ``same_upper``/``same_lower`` (crop ``max(ek - s, 0)``
           in total, the odd unit at the end / beginning; see
           :func:`onednn_graph.shapes.resolve_pads`) or ``valid`` (crop nothing).
PyTorch    ``padding=p`` crops ``p`` at both ends, ``output_padding`` as oneDNN's
           (it must be ``< max(stride, dilation)``). No asymmetric padding, no
           ``"same"`` for transposed convolutions.
JAX        ``lax.conv_transpose(padding=[(lo, hi), ...])`` pads the
           stride-dilated *input* of a forward convolution: ``lo = ek-1-pads_begin``,
           ``hi = ek-1-pads_end+output_padding``. ``"SAME"``/``"VALID"`` are
           JAX's ``_conv_transpose_padding``. (With ``use_consistent_padding=True``
           the pairs are PyTorch-style crops instead.) Kernel orientation is a
           separate matter: these equivalences hold with ``transpose_kernel=True``.
ONNX       ``pads = [x1_begin, ..., x1_end, ...]`` crop like oneDNN's pads;
           ``output_padding`` likewise; ``auto_pad`` = ``SAME_UPPER``/``SAME_LOWER``
           or an ``output_shape`` attribute fix the output size and derive
           ``total = s*(x-1) + output_padding + ek - output_shape``.
=========  ======================================================================

Where they disagree
-------------------
* **SAME output size.** ONNX and JAX give ``s*x`` exactly. oneDNN gives
  ``s*x + output_padding`` while ``ek >= s``; when the kernel is smaller than
  the stride (``ek < s``) oneDNN clamps the crop at 0 and gives
  ``s*(x-1) + ek + output_padding``, smaller than ``s*x``. JAX then adds
  ``s - ek`` zero elements at the end (an ``output_padding`` here); ONNX's
  formula gives a negative total, which its reference implementation splits
  with floor division (:func:`from_onnx` does the same): ``SAME_UPPER`` then
  puts the extra elements first (a negative ``pads_begin``), ``SAME_LOWER`` last.
* **Placement of the odd unit.** ``SAME_UPPER`` (ONNX) = ``same_upper``
  (oneDNN) = JAX ``"SAME"``: the extra crop at the end. ``SAME_LOWER`` /
  ``same_lower``: at the beginning. ONNX's ``output_shape`` with
  ``auto_pad=NOTSET`` splits like ``SAME_LOWER``.
* **output_padding under SAME.** ONNX counts it inside the total (the output
  stays ``s*x``); oneDNN adds it after (``s*x + output_padding``).
* **VALID.** oneDNN and ONNX crop nothing: ``s*(x-1) + ek``. JAX's ``"VALID"``
  gives ``s*(x-1) + max(ek, s)``: when ``ek < s`` it appends ``s - ek``
  zero elements.

Negative pads
-------------
A negative ``pads_begin`` (``pads_end``) adds that many elements before (after)
the full output; no kernel window reaches them, so they hold the bias, or zero.
JAX pairs with ``lo > ek - 1`` and ONNX's ``output_shape`` reach them, and the
functional API takes them (oneDNN 3.2 accepts negative pads on these ops; the
package runs the op on a view without those elements). A negative end is written
as ``output_padding`` here, which means the same.

Examples
--------
>>> from onednn_graph import padding
>>> p = padding.from_jax("SAME", kernel=(3,), strides=(2,))
>>> p
Pads(pads_begin=(0,), pads_end=(1,), output_padding=(0,))
>>> p.output_shape((4,), kernel=(3,), strides=(2,))
(8,)
>>> padding.to_onnx(p)
{'pads': [0, 1], 'output_padding': [0]}
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import shapes
from ._impl import attrs as _attrs

__all__ = ["Pads", "from_onednn", "from_torch", "to_torch", "from_jax", "to_jax",
           "from_onnx", "to_onnx"]

Shape = Tuple[int, ...]
#: An int (every axis), one int per axis, or one ``(begin, end)`` pair per axis.
PaddingSpec = Union[int, Sequence[Union[int, Sequence[int]]]]
SpatialArg = Union[int, Sequence[int]]
_ANY = -(2**62)  # JAX's pairs may be negative (they then crop the dilated input)


class Pads(NamedTuple):
    """Explicit transposed-convolution padding in oneDNN's terms, one value per spatial axis.

    ``pads_begin``/``pads_end`` crop the full output (a negative one extends
    it), ``output_padding`` extends it at the end (see the module docstring).
    """

    pads_begin: Shape
    pads_end: Shape
    output_padding: Shape

    def attrs(self) -> Dict[str, Any]:
        """The keywords of :func:`onednn_graph.conv_transpose` and its gradients.

        Examples
        --------
        >>> Pads((1,), (0,), (1,)).attrs()
        {'pads_begin': [1], 'pads_end': [0], 'output_padding': [1], 'auto_pad': 'none'}
        """
        return {"pads_begin": list(self.pads_begin), "pads_end": list(self.pads_end),
                "output_padding": list(self.output_padding), "auto_pad": "none"}

    def output_shape(self, input_spatial: Sequence[int], kernel: Sequence[int],
                     strides: SpatialArg = 1, dilations: SpatialArg = 1) -> Shape:
        """Spatial output size of a transposed convolution with this padding.

        Examples
        --------
        >>> Pads((1,), (1,), (1,)).output_shape((5,), kernel=(3,), strides=(2,))
        (10,)
        """
        s, d = _strides_dilations(len(kernel), strides, dilations)
        return tuple(shapes.conv_transpose_out_size(x, k, s_, d_, pb, pe, op)
                     for x, k, s_, d_, pb, pe, op in zip(input_spatial, kernel, s, d,
                                                         self.pads_begin, self.pads_end,
                                                         self.output_padding))


def _kernel(kernel: Sequence[int]) -> Shape:
    return _attrs.check_int_list("kernel", kernel, 1)


def _strides_dilations(rank: int, strides: SpatialArg, dilations: SpatialArg
                       ) -> Tuple[Shape, Shape]:
    a = _attrs.normalize("ConvTranspose", rank, strides=strides, dilations=dilations)
    return a.strides, a.dilations


def _extents(kernel: Sequence[int], dilations: Sequence[int]) -> Shape:
    return tuple(shapes.effective_kernel(k, d) for k, d in zip(kernel, dilations))


def _per_axis(name: str, value: SpatialArg, rank: int) -> Shape:
    """An int for every axis or one int (>= 0) per axis."""
    result: Shape = getattr(_attrs.normalize("ConvTranspose", rank, **{name: value}), name)
    return result


def _pairs(name: str, value: Any, rank: int) -> List[Tuple[int, int]]:
    """int | one int per axis | one (begin, end) pair per axis -> (begin, end) per axis."""
    if not isinstance(value, (list, tuple)):
        v = _attrs.check_int(name, value, 0)
        return [(v, v)] * rank
    if len(value) != rank:
        raise ValueError(f"{name} must have {rank} entries (one per spatial axis), got {value!r}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, (list, tuple)):
            if len(item) != 2:
                raise ValueError(f"{name}[{i}] must be an int or a (begin, end) pair, got {item!r}")
            out.append((_attrs.check_int(f"{name}[{i}][0]", item[0], 0),
                        _attrs.check_int(f"{name}[{i}][1]", item[1], 0)))
        else:
            v = _attrs.check_int(f"{name}[{i}]", item, 0)
            out.append((v, v))
    return out


def _fold(begin: Sequence[int], end: Sequence[int], extra: Sequence[int]) -> Pads:
    """Pads from crops that may be negative: a negative end crop is output_padding
    (elements appended at the end); a negative begin crop stays a negative
    pads_begin (elements before the output, which no kernel window reaches)."""
    return Pads(tuple(begin), tuple(max(e, 0) for e in end),
                tuple(x + max(-e, 0) for e, x in zip(end, extra)))


def from_onednn(kernel: Sequence[int], *, strides: SpatialArg = 1, dilations: SpatialArg = 1,
                pads_begin: SpatialArg = 0, pads_end: SpatialArg = 0, auto_pad: str = "none",
                output_padding: SpatialArg = 0) -> Pads:
    """Explicit pads of oneDNN ConvTranspose attributes (``auto_pad`` resolved as the package does).

    Examples
    --------
    >>> from_onednn((4,), strides=2, auto_pad="same_lower")
    Pads(pads_begin=(1,), pads_end=(1,), output_padding=(0,))
    >>> from_onednn((3,), strides=2, auto_pad="same_lower")    # odd total 1 goes first
    Pads(pads_begin=(1,), pads_end=(0,), output_padding=(0,))
    """
    k = _kernel(kernel)
    a = _attrs.normalize("ConvTranspose", len(k), strides=strides, dilations=dilations,
                         pads_begin=pads_begin, pads_end=pads_end, auto_pad=auto_pad,
                         output_padding=output_padding)
    # ConvTranspose's SAME rule does not read the input size; any size will do.
    pb, pe = shapes.resolve_pads(a, (1,) * len(k), k)
    return Pads(pb, pe, a.output_padding)


def from_torch(padding: Union[PaddingSpec, str] = 0, output_padding: SpatialArg = 0, *,
               kernel: Sequence[int], strides: SpatialArg = 1,
               dilations: SpatialArg = 1) -> Pads:
    """Pads of PyTorch's ``conv_transpose`` arguments, plus what PyTorch lacks for it.

    ``padding`` is PyTorch's (an int or one int per axis, cropped at both
    ends), or one ``(begin, end)`` pair per axis, or ``"valid"`` (no padding),
    or ``"same"`` (output ``stride * input`` per axis, the odd crop at the end:
    JAX's and ONNX SAME_UPPER's rule, including the ``ek < stride`` case).
    ``output_padding`` must be ``< max(stride, dilation)``, as in PyTorch, and
    0 with ``"same"``.

    Examples
    --------
    >>> from_torch(1, 1, kernel=(3, 3), strides=2)
    Pads(pads_begin=(1, 1), pads_end=(1, 1), output_padding=(1, 1))
    >>> from_torch([(0, 2)], kernel=(3,), strides=2)
    Pads(pads_begin=(0,), pads_end=(2,), output_padding=(0,))
    >>> from_torch("same", kernel=(1,), strides=3)             # kernel < stride
    Pads(pads_begin=(0,), pads_end=(0,), output_padding=(2,))
    """
    k = _kernel(kernel)
    rank = len(k)
    s, d = _strides_dilations(rank, strides, dilations)
    op = _per_axis("output_padding", output_padding, rank)
    if isinstance(padding, str):
        mode = _attrs.check_choice("padding", padding, ("same", "valid"), fold_case=True)
        if mode == "valid":
            return Pads((0,) * rank, (0,) * rank, op)
        if any(op):
            raise ValueError("output_padding must be 0 with padding='same' (the output size "
                             "is stride * input)")
        return from_jax("SAME", kernel=k, strides=s, dilations=d)
    for i, (o, s_, d_) in enumerate(zip(op, s, d)):
        if o >= max(s_, d_):
            raise ValueError(f"output_padding[{i}] = {o} must be smaller than stride ({s_}) "
                             f"or dilation ({d_}), as in PyTorch")
    pairs = _pairs("padding", padding, rank)
    return Pads(tuple(b for b, _ in pairs), tuple(e for _, e in pairs), op)


def to_torch(pads: Pads, *, strides: SpatialArg = 1, dilations: SpatialArg = 1
             ) -> Tuple[Shape, Shape]:
    """PyTorch's ``(padding, output_padding)`` for `pads`, or ValueError when it has none.

    PyTorch crops ``padding`` at both ends and gives back ``output_padding``
    at the end, so ``pads_end`` may be smaller than ``pads_begin`` by at most
    ``max(stride, dilation) - 1 - output_padding``.

    Examples
    --------
    >>> to_torch(Pads((1,), (0,), (0,)), strides=2)
    ((1,), (1,))
    """
    rank = len(pads.pads_begin)
    s, d = _strides_dilations(rank, strides, dilations)
    for i, pb in enumerate(pads.pads_begin):
        if pb < 0:
            raise ValueError(f"axis {i}: pads_begin={pb} (positions before the output) has no "
                             "PyTorch equivalent; use onednn_graph.torch_like with (begin, end) "
                             "pairs")
    op = tuple(pb - pe + o for pb, pe, o in zip(*pads))
    for i, (o, s_, d_) in enumerate(zip(op, s, d)):
        if not 0 <= o < max(s_, d_):
            raise ValueError(f"axis {i}: pads_begin={pads.pads_begin[i]}, pads_end="
                             f"{pads.pads_end[i]}, output_padding={pads.output_padding[i]} "
                             "has no PyTorch equivalent (it would need output_padding "
                             f"{o}, not in [0, max(stride, dilation)); use "
                             "onednn_graph.torch_like with (begin, end) pairs")
    return tuple(pads.pads_begin), op


def _jax_string(mode: str, ek: int, s: int) -> Tuple[int, int]:
    """``(lo, hi)`` of JAX's _conv_transpose_padding (jax/_src/lax/convolution.py)."""
    if mode == "SAME":
        pad_len = ek + s - 2
        lo = ek - 1 if s > ek - 1 else -(-pad_len // 2)
    else:  # VALID
        pad_len = ek + s - 2 + max(ek - s, 0)
        lo = ek - 1
    return lo, pad_len - lo


def from_jax(padding: Union[str, Sequence[Sequence[int]]], *, kernel: Sequence[int],
             strides: SpatialArg = 1, dilations: SpatialArg = 1,
             use_consistent_padding: bool = False) -> Pads:
    """Pads of ``jax.lax.conv_transpose``'s ``padding``: ``"SAME"``, ``"VALID"`` or ``(lo, hi)`` pairs.

    ``kernel`` is the kernel's spatial size, ``dilations`` is JAX's
    ``rhs_dilation``. With ``use_consistent_padding=True`` (newer JAX), pairs
    are crops, as PyTorch's padding.

    Examples
    --------
    >>> from_jax("VALID", kernel=(2,), strides=(3,))         # JAX appends s - k zeros
    Pads(pads_begin=(0,), pads_end=(0,), output_padding=(1,))
    >>> from_jax([(2, 3)], kernel=(3,), strides=(2,))
    Pads(pads_begin=(0,), pads_end=(0,), output_padding=(1,))
    """
    k = _kernel(kernel)
    rank = len(k)
    s, d = _strides_dilations(rank, strides, dilations)
    ek = _extents(k, d)
    if isinstance(padding, str):
        mode = _attrs.check_choice("padding", padding.upper(), ("SAME", "VALID"))
        if use_consistent_padding:
            raise ValueError("use_consistent_padding applies to (lo, hi) pairs only")
        pairs = [_jax_string(mode, e, s_) for e, s_ in zip(ek, s)]
    else:
        if isinstance(padding, int) or len(padding) != rank or any(
                not isinstance(p, (list, tuple)) or len(p) != 2 for p in padding):
            raise ValueError(f"padding must be 'SAME', 'VALID' or {rank} (lo, hi) pairs, "
                             f"got {padding!r}")
        pairs = [(_attrs.check_int(f"padding[{i}][0]", lo, _ANY),
                  _attrs.check_int(f"padding[{i}][1]", hi, _ANY))
                 for i, (lo, hi) in enumerate(padding)]
        if use_consistent_padding:
            return _fold([lo for lo, _ in pairs], [hi for _, hi in pairs], (0,) * rank)
    return _fold([e - 1 - lo for e, (lo, _) in zip(ek, pairs)],
                 [e - 1 - hi for e, (_, hi) in zip(ek, pairs)], (0,) * rank)


def to_jax(pads: Pads, *, kernel: Sequence[int], dilations: SpatialArg = 1
           ) -> List[Tuple[int, int]]:
    """``(lo, hi)`` pairs for ``jax.lax.conv_transpose`` (default padding semantics).

    Examples
    --------
    >>> to_jax(Pads((1,), (1,), (1,)), kernel=(3,))
    [(1, 2)]
    """
    k = _kernel(kernel)
    _, d = _strides_dilations(len(k), 1, dilations)
    return [(e - 1 - pb, e - 1 - pe + op)
            for e, pb, pe, op in zip(_extents(k, d), *pads)]


def from_onnx(pads: Optional[Sequence[int]] = None, auto_pad: str = "NOTSET",
              output_padding: SpatialArg = 0, *, kernel: Sequence[int],
              strides: SpatialArg = 1, dilations: SpatialArg = 1,
              input_spatial: Optional[Sequence[int]] = None,
              output_shape: Optional[Sequence[int]] = None) -> Pads:
    """Pads of ONNX ConvTranspose's ``pads``, ``auto_pad``, ``output_padding``, ``output_shape``.

    ``SAME_UPPER``/``SAME_LOWER`` and ``output_shape`` need ``input_spatial``
    (ONNX derives the pads from the input size). ``output_shape`` holds the
    spatial sizes.

    Examples
    --------
    >>> from_onnx([1, 2, 1, 2], kernel=(3, 3), strides=(3, 2))
    Pads(pads_begin=(1, 2), pads_end=(1, 2), output_padding=(0, 0))
    >>> from_onnx(auto_pad="SAME_UPPER", output_padding=[1], kernel=(3,), strides=(2,),
    ...           input_spatial=(4,))                        # output stays s*x = 8
    Pads(pads_begin=(1,), pads_end=(1,), output_padding=(1,))
    """
    k = _kernel(kernel)
    rank = len(k)
    s, d = _strides_dilations(rank, strides, dilations)
    op = _per_axis("output_padding", output_padding, rank)
    mode = _attrs.check_choice("auto_pad", auto_pad,
                               ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))
    if mode in ("SAME_UPPER", "SAME_LOWER") or output_shape is not None:
        if input_spatial is None:
            raise ValueError(f"auto_pad={mode} / output_shape need input_spatial")
        x = _attrs.check_int_list("input_spatial", input_spatial, 1, rank)
        target = (tuple(s_ * x_ for s_, x_ in zip(s, x)) if output_shape is None
                  else _attrs.check_int_list("output_shape", output_shape, 1, rank))
        split = "same_upper" if mode == "SAME_UPPER" else "same_lower"
        # A negative total (kernel + output_padding < stride, or an output_shape
        # past the full output) is split as ONNX's reference implementation splits
        # it, with floor division: the ends it pads hold positions no kernel
        # window reaches (the output of ONNX's test_convtranspose_output_shape).
        halves = [shapes.split_same(s_ * (x_ - 1) + o + e - t, split)
                  for x_, e, s_, o, t in zip(x, _extents(k, d), s, op, target)]
        return _fold([b for b, _ in halves], [e for _, e in halves], op)
    if mode == "VALID" or pads is None:
        return Pads((0,) * rank, (0,) * rank, op)
    p = _attrs.check_int_list("pads", pads, 0, 2 * rank)
    return Pads(p[:rank], p[rank:], op)


def to_onnx(pads: Pads) -> Dict[str, List[int]]:
    """ONNX ConvTranspose attributes ``pads`` and ``output_padding`` for `pads`.

    Examples
    --------
    >>> to_onnx(Pads((1, 0), (2, 1), (0, 1)))
    {'pads': [1, 0, 2, 1], 'output_padding': [0, 1]}
    """
    for i, pb in enumerate(pads.pads_begin):
        if pb < 0 or pads.pads_end[i] < 0:
            raise ValueError(f"axis {i}: ONNX's pads are >= 0; positions before or after the "
                             "full output need ONNX's output_shape (with the input size)")
    return {"pads": list(pads.pads_begin) + list(pads.pads_end),
            "output_padding": list(pads.output_padding)}


def __dir__() -> list[str]:
    return list(__all__)

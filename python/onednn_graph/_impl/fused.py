"""An op with post-ops (``onednn_graph.post``), and ConvTranspose's int8 form
(``onednn_graph.quant``): one oneDNN graph, compiled by its fusion policy, cached per
kind of call.

The graph is the op as ``lower`` hands it to oneDNN (quantized inputs through a
Dequantize each), then each post-op on the previous result (a binary one's operand
broadcast NumPy-style, a quantized one dequantized), then a Quantize where the result
is quantized. Where the op runs as written (``NativeOp.lowering == "native"``), the
graph starts with it and oneDNN 3.2 fuses ConvTranspose's whole chain into one
partition (after the backward-data ops it fuses nothing); where it is lowered (a crop,
another op), the op runs through the functional API first and the post-ops' graph
takes its result. An int8 chain oneDNN runs slowly is cut where the package measured
it (``CUT_BEFORE_BINARY``), and one it fuses wrongly is kept apart by the Graph itself
(``kept_apart``). Either way every partition oneDNN
returns runs, in order, on the caller's arrays and buffers of this module's own for
values between them (``_Call.partitions`` counts them).
"""

from __future__ import annotations

import itertools
import threading
import time
import warnings
from typing import Any, Optional, Sequence

import numpy as np

from .. import _core, errors as _errors, post as _post, quant as _quant
from . import (arrays as _arrays, call as _call, compiled as _compiled, lowering as _lowering,
               plan as _plan, registry as _registry, spec_graph as _spec_graph,
               spec_op as _spec_op, version as _version)

#: The ops that take post-ops: ConvTranspose (which oneDNN fuses with them) and the
#: backward-data ops (which oneDNN 3.2 and 3.13 match with single-op patterns only: their
#: post-ops run as partitions of their own, ``FusedOperation.partitions`` says how many).
KINDS = (_registry.CONV_TRANSPOSE, _registry.CONV_TRANSPOSE_BWD_DATA, _registry.CONV_BWD_DATA)

# Logical tensor ids: post-op i's output _FIRST_POST_ID + i, its operand _FIRST_OPERAND_ID + i;
# the f32 tensors Dequantize makes from quantized arrays from _FIRST_DEQUANTIZED_ID on.
_FIRST_POST_ID, _FIRST_OPERAND_ID, _FIRST_DEQUANTIZED_ID = 100, 200, 300

#: One array the graph reads or writes: (shape, strides), oneDNN dtype, and for quantized
#: data its quantization (the graph dequantizes what it reads and quantizes what it writes).
Port = tuple[tuple, str, Optional[_quant.Quantization]]


def chain(head: Optional[tuple[str, dict, list[Port]]], start: Optional[Port],
           posts: Sequence[tuple[str, tuple, Optional[Port]]],
           out: Port, strided: bool = False) -> tuple[Any, list[int], list[int], int]:
    """The finalized graph of `head` (kind, native attrs, its inputs), or of input `start`
    when `head` is None, then `posts` ((kind, attrs, operand or None) each), ending in
    result `out`; and the ids of its inputs, of the post-ops' operands and of its result.
    Values between ops are f32 where an input or the result is quantized, else `out`'s
    dtype, of a layout oneDNN chooses (C-contiguous with `strided`: a graph to write out)."""
    lt = _core.LogicalTensor
    g = _spec_graph.Graph()
    ports = ([] if head is None else head[2]) + [p for _, _, p in posts if p is not None] + [out] \
        + ([start] if start is not None else [])
    compute = "f32" if any(q is not None for _, _, q in ports) else out[1]
    shape = tuple(out[0][0])
    between = (shape, _arrays.element_strides(np.empty(shape, np.int8))) if strided else (shape,)
    op_ids, dequantized = itertools.count(), itertools.count(_FIRST_DEQUANTIZED_ID)

    def read(tid: int, port: Port) -> Any:
        """The tensor an op reads for the array of id `tid` (a Dequantize's result for
        quantized data)."""
        meta, dtype, q = port
        raw = lt(tid, dtype, *meta)
        if q is None:
            return raw
        real = lt(next(dequantized), "f32",
                  *((meta[0], _arrays.element_strides(np.empty(meta[0], np.int8)))
                    if strided else (meta[0],)))
        g.add_op(_spec_op.Op(next(op_ids), "Dequantize", [raw], [real], q.attrs))
        return real

    def value(tid: int, last: bool) -> Any:
        """An op's result: the graph's output when it is the last op and `out` is not
        quantized, else an f32 (or `out`-dtype) value of unknown layout."""
        return lt(tid, out[1], *out[0]) if last and out[2] is None else lt(tid, compute, *between)

    if head is not None:
        kind, attrs, metas = head
        ins = [read(i, port) for i, port in enumerate(metas)]
        current = value(_FIRST_POST_ID - 1, not posts)
        g.add_op(_spec_op.Op(next(op_ids), kind, ins, [current], attrs))
        inputs = list(range(len(metas)))
    else:
        assert start is not None
        current = read(_FIRST_POST_ID - 1, start)
        inputs = [_FIRST_POST_ID - 1]
    operands: list[int] = []
    for i, (post_kind, post_attrs, operand) in enumerate(posts):
        result = value(_FIRST_POST_ID + i, i == len(posts) - 1)
        ins = [current]
        op_attrs: dict[str, Any] = dict(post_attrs)
        if operand is not None:
            ins.append(read(_FIRST_OPERAND_ID + i, operand))
            operands.append(_FIRST_OPERAND_ID + i)
            op_attrs["auto_broadcast"] = "numpy"
        g.add_op(_spec_op.Op(next(op_ids), post_kind, ins, [result], op_attrs))
        current = result
    if out[2] is not None:
        result = lt(_FIRST_OPERAND_ID - 1, out[1], *out[0])
        g.add_op(_spec_op.Op(next(op_ids), "Quantize", [current], [result], out[2].attrs))
        current = result
    g.finalize()
    return g, inputs, operands, current.id


class Fused:
    """The compiled partitions of one chain (``chain``'s arguments)."""

    def __init__(self, head: Optional[tuple[str, dict, list[Port]]], start: Optional[Port],
                 posts: Sequence[tuple[str, tuple, Optional[Port]]], out: Port) -> None:
        g, self.inputs, self.operands, self.output = chain(head, start, posts, out)
        self.result = _core.LogicalTensor(self.output, out[1], *out[0])
        self.parts = []
        for p in g.get_partitions("fusion"):
            ins, outs = list(p.input_ports), list(p.output_ports)
            self.parts.append((p.compile(ins, outs, _compiled.engine()), ins, outs))
        self.partitions = len(self.parts)
        # oneDNN has no kernel for the dtype here: its partitions run in f32 between
        # TypeCasts (3.13 returns such a chain op by op, 3.2 as one partition).
        self.runs_in_f32 = any(compiled.runs_in_f32 for compiled, _, _ in self.parts)
        # oneDNN 3.2 would apply a ConvTranspose's epilogue more than once: it runs after
        # the kernel (_impl.epilogue_apart); why, or None.
        self.epilogue_apart = next((c.epilogue_apart for c, _, _ in self.parts if c.epilogue_apart), None)
        self.lock = threading.Lock()

    def run(self, arrays: dict[int, np.ndarray]) -> None:
        """Execute with `arrays` by logical tensor id (inputs, operands, the output)."""
        engine, stream = _compiled.engine(), _compiled.stream()
        held = dict(arrays)
        for compiled, ins, outs in self.parts:
            for t in outs:
                if t.id not in held:  # a result between partitions
                    held[t.id] = _compiled.array_for(t)
            compiled.execute(stream, [_spec_graph.Tensor(t, engine, held[t.id]) for t in ins],
                             [_spec_graph.Tensor(t, engine, held[t.id]) for t in outs])


#: The first item of a fused call's cache key (``prepare``).
_KEY_TAG = "fused"


def _get(key: Any, build: Any) -> "_Call":
    """The fused call under `key` in the functional API's one cache (``_compiled.CACHE``:
    counted, listed, cleared and bounded with single-op calls), or `build()`'s, stored
    there. Two threads missing at once both build; the second store replaces the first."""
    fused = _compiled.CACHE.lookup(key)
    if fused is None:
        fused = build()
        # No NativeCall: a fused call runs its stages in Python (``execute``).
        _compiled.CACHE.store(key, fused, fused.compile_seconds, None)
    return fused


def _read(name: str, value: Any) -> tuple[np.ndarray, Optional[_quant.Quantization]]:
    """The array oneDNN reads for `name`, and its quantization when it is quantized data."""
    if not isinstance(value, _quant.Quantized):
        return _arrays.as_input(name, value), None
    data, q = _arrays.to_numpy(name, value.data), value.quantization
    if data.dtype != _quant.DTYPES[q.dtype]:
        raise TypeError(f"{name}: data of dtype {data.dtype} for a {q.dtype} quantization")
    return (data if _arrays.describable(data) else np.ascontiguousarray(data)), q


def _post_ops(post_ops: Any) -> list[tuple[_post.PostOp, Optional[np.ndarray],
                                           Optional[_quant.Quantization]]]:
    """The post-ops, their operands as arrays oneDNN reads and those operands'
    quantizations (types checked)."""
    if isinstance(post_ops, _post.PostOp) or not isinstance(post_ops, (list, tuple)):
        raise TypeError("post_ops must be a list of onednn_graph.post ops (post.relu(), "
                        f"post.add(x), ...), got {type(post_ops).__name__}")
    checked = []
    for i, p in enumerate(post_ops):
        if not isinstance(p, _post.PostOp):
            raise TypeError(f"post_ops[{i}] must be an onednn_graph.post op, got {type(p).__name__}")
        operand, q = (None, None) if p.operand is None else \
            _read(f"post_ops[{i}] ({p.kind}) operand", p.operand)
        checked.append((p, operand, q))
    return checked


def _post_key(posts: Sequence[tuple[_post.PostOp, Optional[np.ndarray], Any]]
              ) -> tuple[tuple[str, tuple, Optional[Port]], ...]:
    """The post-ops as ``chain`` takes them (kind, attributes, operand's port): also what
    a cached call is found by."""
    return tuple((p.kind, p.attrs, None if o is None else
                  (_compiled.meta(o), _arrays.dtype_name(o.dtype), q)) for p, o, q in posts)


def _check_operands(posts: Sequence[tuple[_post.PostOp, Optional[np.ndarray], Any]],
                    shape: tuple, dtype: np.dtype) -> None:
    for i, (p, operand, q) in enumerate(posts):
        if operand is None:
            continue
        if q is None and operand.dtype != dtype:
            raise TypeError(f"post_ops[{i}] ({p.kind}): the operand has dtype {operand.dtype}, "
                            f"the result {dtype}")
        try:
            if np.broadcast_shapes(operand.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"post_ops[{i}] ({p.kind}): an operand of shape {operand.shape} "
                             f"does not broadcast to the result's {shape}") from None


def _check_int8(kind: str, quants: Sequence[Optional[_quant.Quantization]],
                inputs: Sequence[np.ndarray], attrs: dict,
                quantize: Optional[_quant.Quantization]) -> None:
    """The int8 forms oneDNN 3.2's ConvTranspose computes (measured, docs/user-guide.md
    "int8"); anything else is refused before it is built."""
    if not _registry.SPECS[kind].int8 and (any(quants) or quantize is not None):
        raise _errors.UnsupportedError(f"{kind}: oneDNN's int8 patterns are ConvTranspose's "
                                       "(the forward op); this op takes no quantized arrays")
    src, weights = quants[0], quants[1]
    if (src is None) != (weights is None):
        raise ValueError("src and weights are both quantized (onednn_graph.quant) or neither; "
                         f"got a quantized {'src' if src else 'weights'} only")
    if src is None:
        if quantize is not None and inputs[0].dtype != np.float32:
            raise _errors.UnsupportedError(f"quantize=: oneDNN's Quantize takes an f32 result, "
                                           f"this one is {inputs[0].dtype}")
        return
    assert weights is not None
    if src.axis is not None:
        raise _errors.UnsupportedError("src: oneDNN's int8 ConvTranspose takes one scale and "
                                       "zero point for src (quant.per_tensor)")
    if weights.dtype != "s8" or any(weights.zero_points):
        raise _errors.UnsupportedError("weights: oneDNN's int8 ConvTranspose takes s8 weights "
                                       "with zero point 0 (symmetric); got "
                                       f"{weights.dtype}, zero points {set(weights.zero_points)}")
    o_axis = 1 if str(attrs.get("weights_format", "XOI")).upper() == "IOX" else inputs[1].ndim - 2
    if weights.axis is not None and weights.axis != o_axis:
        raise ValueError(f"weights: per-channel scales go on the output-channel axis, axis "
                         f"{o_axis} of {attrs.get('weights_format', 'XOI')} weights, not axis "
                         f"{weights.axis} (oneDNN 3.2 reads them as per output channel whatever "
                         "the axis says)")
    if len(inputs) > 2 and inputs[2].dtype != np.float32:
        raise TypeError(f"bias: an int8 ConvTranspose takes an f32 bias, got {inputs[2].dtype}")


#: oneDNN ISAs whose int8 kernels multiply u8 by s8 with VPMADDUBSW (no VNNI): the sum of
#: two products saturates at 16 bits, and for s8 src they halve the weights
#: (oneDNN's docs/advanced/int8_computations.md; seen as ``sa0.5`` in ONEDNN_VERBOSE).
_WITHOUT_VNNI = ("sse41", "avx", "avx2", "avx512_core")


def _warn_inexact(src: _quant.Quantization, weights: np.ndarray) -> None:
    """A RuntimeWarning when this CPU's int8 kernel cannot compute these weights exactly."""
    isa = _version.cpu_isa()
    if isa not in _WITHOUT_VNNI:
        return
    if src.dtype == "u8" and (int(weights.min()) < -64 or int(weights.max()) > 64):
        why = ("u8 src times s8 weights may saturate in 16 bits (pairs of products beyond "
               "32767): keep weights within [-64, 64] (7 bits)")
    elif src.dtype == "s8" and bool(np.bitwise_and(weights, 1).any()):
        why = ("for s8 src oneDNN halves the weights (rounding odd ones): use u8 src, or "
               "even weights")
    else:
        return
    warnings.warn(f"int8 ConvTranspose on {isa} (no VNNI): {why}; the result may differ from "
                  "the exact one", RuntimeWarning, stacklevel=5)  # the caller of og.conv_transpose


class _Problem:
    """A fused call's arguments, checked and planned: the op's plan, its inputs as the
    graph reads them, the dtype between ops (f32 for int8) and the result's."""

    def __init__(self, kind: str, names: Sequence[str], inputs: Sequence[np.ndarray],
                 quants: Sequence[Optional[_quant.Quantization]], attrs: dict,
                 posts: Sequence[tuple[_post.PostOp, Optional[np.ndarray], Any]],
                 quantize: Optional[_quant.Quantization]) -> None:
        _check_int8(kind, quants, inputs, attrs, quantize)
        self.src_quantization = quants[0]
        # The plan checks the call; quantized data is planned as the f32 it stands for.
        planned = [np.empty(a.shape, np.float32) if q else a for a, q in zip(inputs, quants)]
        self.cp = _plan.plan_call(kind, names, planned, attrs)
        self.compute = np.dtype(np.float32) if quants[0] else inputs[0].dtype
        self.shape = tuple(self.cp.plan.output_shape)
        self.dtype = _quant.DTYPES[quantize.dtype] if quantize else self.compute
        _check_operands(posts, self.shape, self.compute)
        self.ports: list[Port] = [(_compiled.meta(a), _arrays.dtype_name(a.dtype), q)
                                  for a, q in zip(inputs, quants)]
        self.post_key = _post_key(posts)
        self.quantize = quantize

    def result(self, meta: Optional[tuple] = None) -> Port:
        """The result's port, C-contiguous unless `meta` says otherwise."""
        return (meta or _compiled.meta(np.empty(self.shape, self.dtype)),
                _arrays.dtype_name(self.dtype), self.quantize)

    def written(self) -> tuple:
        """``chain``'s head, post-ops and result for the call as made: the op with the
        attributes it was given, its epilogue, a C-contiguous result (arrays' layouts
        only, no arrays)."""
        return (self.cp.spec.kind, self.cp.spec_attrs(), self.ports), self.post_key, self.result()


def _written_graph(written: tuple) -> Any:
    """The graph of a call as made (``_Problem.written``), with C-contiguous values
    between ops: what its reproducer writes (the package's Graph lowers the op as a call
    would)."""
    head, posts, result = written
    return chain(head, None, posts, result, strided=True)[0]


#: Where an int8 call's chain is cut before its first binary post-op on a full-size
#: operand (the op, bias and leading unary post-ops as one partition with an f32 result,
#: the rest and the Quantize after it): (oneDNN version, AVX-512 family) pairs where
#: oneDNN fused such chains into a slow kernel. On the AVX2 EPYC oneDNN 3.2 and 3.13
#: leave their jit_uni_int8 deconvolution for gemm_s8u8s32 (ONEDNN_VERBOSE) for any such
#: binary post-op but an Add they run as their "sum" (``_Call._sum``). With a src zero
#: point that took 75-78 ms (3.13: 16-33 ms) against 0.29-0.54 ms (0.40-0.92 ms) cut,
#: without one 0.68-1.04 ms (0.61-0.84 ms) against 0.24-0.46 ms (0.45-0.75 ms)
#: (``python benchmarks/int8_chains.py``, docs/benchmarks/avx2-int8-chains.md); on the
#: suite's dcgan-1 the fused chain took 32 s where the f32 call took 15 ms.
CUT_BEFORE_BINARY: frozenset[tuple[tuple[int, int], bool]] = frozenset({((3, 2), False),
                                                                        ((3, 13), False)})


class _Call(_compiled.FusedEntry):
    """What one kind of fused call settled when it was first made: its result's shape,
    whether the op runs alone first (it is lowered), and the compiled stages that follow:
    the chain (one ``Fused``, or two where it is cut), each reading the last one's result.
    An entry of the functional API's cache (``og.cache.cached_ops()`` lists it)."""

    def __init__(self, problem: _Problem, out: Optional[tuple]) -> None:
        started = time.perf_counter()
        self.kind = problem.cp.kind
        self.shape, self.dtype, self.compute = problem.shape, problem.dtype, problem.compute
        self.written = problem.written()  # for its reproducer (``graph``)
        self.src_quantization = problem.src_quantization
        kind, native = problem.cp.spec.kind, problem.cp.native
        self.lowered = not (native.kind == kind and native.lowering == "native" and not native.crop)
        if self.lowered and self.src_quantization is not None:
            raise _errors.UnsupportedError(
                f"int8 ConvTranspose: oneDNN {_version.onednn_version()} computes this problem "
                f"only as {native.lowering}, which the int8 form does not take")
        result, quantize = problem.result(out), problem.quantize
        real: Port = (_compiled.meta(np.empty(self.shape, np.float32)), "f32", None)
        post_key = problem.post_key  # (a quantized skip oneDNN would fuse wrongly: kept_apart)
        cut = len(post_key)
        if self.src_quantization is not None and \
                (_version.linked_version(), _lowering.avx512(_version.cpu_isa())) in CUT_BEFORE_BINARY:
            full = [i for i, (_, _, op) in enumerate(post_key)
                    if op is not None and tuple(op[0][0]) == self.shape]
            cut = full[0] if full and not self._sum(post_key, full, quantize) else cut
        head_end = result if cut == len(post_key) else real
        if self.lowered:  # the op runs alone, the post-ops' graph takes its result
            start: Port = (_compiled.meta(np.empty(self.shape, problem.compute)),
                           _arrays.dtype_name(problem.compute), None)
            self.stages = [Fused(None, start, post_key[:cut], head_end)]
        else:
            self.stages = [Fused((kind, native.attrs, problem.ports), None, post_key[:cut], head_end)]
        if cut < len(post_key):
            self.stages.append(Fused(None, real, post_key[cut:], result))
        apart = next((f.epilogue_apart for f in self.stages if f.epilogue_apart), None)
        self.lowering = native.lowering if apart is None else \
            apart if native.lowering == "native" else f"{native.lowering}, {apart}"
        self.compile_seconds = time.perf_counter() - started

    @staticmethod
    def _sum(post_key: tuple, full: list[int], quantize: Optional[_quant.Quantization]) -> bool:
        """Whether the one full-size binary post-op is an Add oneDNN runs as its "sum"
        (accumulating into the result) in the fast kernel: the last post-op into an f32
        result (a quantized operand is dequantized in a partition of its own first), or
        the only post-op, with an operand quantized in the result's dtype, into a
        quantized result (oneDNN's int8 add pattern). Measured on the AVX2 EPYC with
        oneDNN 3.2 (``benchmarks/int8_chains.py``): those fused took 0.16-0.44 ms, where
        a ReLU then a u8 skip into a u8 result took 52-79 ms fused with a src zero point."""
        if len(full) != 1 or full[0] != len(post_key) - 1 or post_key[full[0]][0] != "Add":
            return False
        operand = post_key[full[0]][2][2]
        return quantize is None or (operand is not None and operand.dtype == quantize.dtype
                                    and len(post_key) == 1)

    @property
    def partitions(self) -> int:
        """The oneDNN partitions a call runs: its stages' and the op's own where it is
        lowered."""
        return sum(f.partitions for f in self.stages) + int(self.lowered)

    @property
    def runs_in_f32(self) -> bool:
        """Whether a partition of the chain runs in f32 between TypeCasts (this CPU's
        oneDNN has no kernel for the dtype)."""
        return any(f.runs_in_f32 for f in self.stages)

    def graph(self) -> Any:
        """The call's graph as ``graph_of`` gives it (what its reproducer writes)."""
        return _written_graph(self.written)

    def __repr__(self) -> str:
        posts = "".join(f" + {kind}" for kind, _, _ in self.written[1])
        return (f"<fused call {self.kind}{posts}, result {self.shape} {self.dtype}, "
                f"{self.partitions} partition{'s' * (self.partitions > 1)}>")


def _arguments(names: Sequence[str], arrays: Sequence[Any], post_ops: Any, quantize: Any
               ) -> tuple[list[tuple[np.ndarray, Optional[_quant.Quantization]]], list]:
    """The inputs and post-ops as the graph reads them (types checked)."""
    if quantize is not None and not isinstance(quantize, _quant.Quantization):
        raise TypeError(f"quantize must be a quantization, onednn_graph.quant.to(dtype, scale, "
                        f"zero_point), got {type(quantize).__name__}")
    return [_read(n, a) for n, a in zip(names, arrays)], _post_ops(post_ops or [])


def prepare(kind: str, names: Sequence[str], arrays: Sequence[Any], attrs: dict,
            post_ops: Any, out: Any = None, quantize: Any = None
            ) -> tuple[_Call, list[np.ndarray], list[Optional[np.ndarray]]]:
    """The compiled call of `kind` on `arrays` with `attrs` (the functional API's
    keywords), `post_ops` and `quantize`, from the cache or made (planned and compiled once
    per kind of call: dtypes, shapes, strides, attributes, quantizations); and the arrays
    oneDNN reads for the inputs and for the post-ops (None for a unary one)."""
    read, posts = _arguments(names, arrays, post_ops, quantize)
    out_view = None if out is None else _arrays.to_numpy("out", out)
    # A C-contiguous `out` is laid out as the result the call allocates without one.
    out_meta = None if out_view is None or out_view.flags.c_contiguous else _compiled.meta(out_view)
    # Tagged: a fused call's key never equals a single-op call's in the one cache.
    # With the calling thread's OpenMP thread count: partitions are compiled for it.
    key = (_KEY_TAG, kind, tuple((_compiled.meta(a), a.dtype.str, q) for a, q in read),
           tuple((k, _call._freeze(v)) for k, v in attrs.items()),
           _post_key(posts), out_meta, quantize, _core.max_threads())
    inputs = [a for a, _ in read]
    call = _get(key, lambda: _Call(_Problem(kind, names, inputs, [q for _, q in read], attrs,
                                            posts, quantize), out_meta))
    return call, inputs, [o for _, o, _ in posts]


def execute(call: _Call, inputs: Sequence[np.ndarray], operands: Sequence[Optional[np.ndarray]],
            out: Any, run_op: Any) -> Any:
    """Run `call` (``prepare``) on `inputs` and the post-ops' `operands`, into `out` or a
    new array; `run_op(y)` runs the op alone into `y` where it is lowered."""
    if call.src_quantization is not None:
        _warn_inexact(call.src_quantization, inputs[1])
    taken = [o for o in operands if o is not None]
    if out is None:
        target = result = np.empty(call.shape, call.dtype)
    else:
        target = _arrays.check_out(out, call.shape, call.dtype, list(inputs) + taken)
        result = out
    value = None
    if call.lowered:
        value = np.empty(call.shape, inputs[0].dtype)
        run_op(value)
    operand = iter(taken)
    for i, stage in enumerate(call.stages):
        held = dict(enumerate(inputs)) if value is None else {stage.inputs[0]: value}
        for op_id in stage.operands:
            held[op_id] = next(operand)
        last = i == len(call.stages) - 1
        held[stage.output] = target if last else _compiled.array_for(stage.result)
        with stage.lock:
            stage.run(held)
        value = held[stage.output]
    return result


def run(kind: str, run_op: Any, names: Sequence[str], arrays: Sequence[Any], attrs: dict,
        post_ops: Any, out: Any, quantize: Any = None) -> Any:
    """The functional API's fused call of `kind`: ``prepare`` then ``execute``."""
    call, inputs, operands = prepare(kind, names, arrays, attrs, post_ops, out, quantize)
    return execute(call, inputs, operands, out, run_op)


def graph_of(kind: str, names: Sequence[str], arrays: Sequence[Any], attrs: dict,
             post_ops: Any, quantize: Any = None) -> Any:
    """The graph of a fused call as it was made: the op with the attributes it was given,
    its epilogue, C-contiguous values between ops (what its reproducer writes; the
    package's Graph lowers the op as a call would)."""
    read, posts = _arguments(names, arrays, post_ops, quantize)
    problem = _Problem(kind, names, [a for a, _ in read], [q for _, q in read], attrs, posts,
                       quantize)
    return _written_graph(problem.written())


def cached() -> list[_Call]:
    """The fused calls the cache holds, least recently used first."""
    return [call for call in _compiled.CACHE.values() if isinstance(call, _Call)]


"""One call of an op, from caller arrays and keywords to oneDNN and back.

``prepare`` does everything that depends only on the call's signature (kind,
keywords, and the shape, strides and dtype of each array): checks, shape
inference, the lowering, compilation. The result, a ``Prepared`` call, is kept
in ``_compiled.CACHE`` under that signature, so a repeated call costs one
native call (``CACHE.call``: the key, the lookup, the ``DirectCall``), or a
lookup and ``Prepared.run`` when the arrays need the Python path: no checks
are repeated that the signature already settled, and none are skipped (an
array of another shape, strides or dtype is another signature; C++ checks
every buffer again).
"""

from __future__ import annotations

import os
from typing import Any, Hashable, Optional, Sequence

import numpy as np

from .. import _core, shapes
from . import (arrays as _arrays, as_f32 as _as_f32, batch_parts as _batch_parts, casts as _casts,
               compiled as _compiled, epilogue_apart as _epilogue_apart, kernels as _kernels,
               lowering as _lowering, matmul_form as _matmul_form, packed_form as _packed_form,
               plan as _plan, polyphase_form as _polyphase_form, split_form as _split_form,
               subpixel_form as _subpixel_form,
               tuning as _tuning,
               tuning_db as _tuning_db, unreached as _unreached)
from .arrays import dtype_name
from ..errors import UnsupportedError

# tune=True also times each lowering on the other thread count below this many
# FLOPs: around _plan.SMALL_FLOPS the two are close, and far above it one thread
# loses by about the thread count.
_TUNE_THREADS_BELOW = 64 * _plan.SMALL_FLOPS


# og.tuning.set_tuning(True): the functional API tunes each new problem too (like
# torch.backends.cudnn.benchmark). Off by default: it multiplies a first call's
# cost (unless the tuning database holds the problem), and a problem's result may
# then differ in rounding from an untuned run. ONEDNN_GRAPH_TUNING=1 turns it on
# for a program that does not call set_tuning. The switch lives here, beside ``run``,
# its one reader (tuning itself is _impl.tuning's).
TUNING_ENV = "ONEDNN_GRAPH_TUNING"
_tune_new = os.environ.get(TUNING_ENV, "").strip().lower() not in ("", "0", "off", "false", "no")


def set_tuning(enabled: bool) -> None:
    """Let the functional API measure every lowering of a new problem and keep the
    fastest, as ``compile_op(..., tune=True)`` does (cached calls are unaffected).
    Decisions are kept in the tuning database (``tuning_database()``), so a
    problem is measured once per machine. At import, ``ONEDNN_GRAPH_TUNING=1``
    sets it on.

    Examples
    --------
    >>> import onednn_graph as og
    >>> og.tuning.set_tuning(True); og.tuning.tuning_enabled()
    True
    >>> og.tuning.set_tuning(False)
    """
    global _tune_new
    if not isinstance(enabled, bool):
        raise TypeError(f"set_tuning takes a bool, got {type(enabled).__name__}")
    _tune_new = enabled


def tuning_enabled() -> bool:
    """Whether the functional API tunes new problems (``set_tuning``)."""
    return _tune_new


class Prepared:
    """A compiled call and how to hand it the caller's arrays."""

    __slots__ = ("op", "output_shape", "dtype", "copy_inputs", "any_copy", "crop_input", "crop",
                 "data_format", "out_perm", "direct", "__weakref__")

    def __init__(self, op: Any, output_shape: tuple[int, ...], dtype: np.dtype,
                 copy_inputs: tuple[bool, ...], crop_input: Optional[int],
                 crop: tuple[tuple[int, int], ...],
                 data_format: str, out_perm: Optional[tuple[int, ...]]) -> None:
        self.op, self.output_shape, self.dtype = op, output_shape, dtype
        self.copy_inputs, self.crop_input, self.crop = copy_inputs, crop_input, crop
        self.any_copy = any(copy_inputs)
        self.data_format, self.out_perm = data_format, out_perm
        # The caller's arrays go to oneDNN as they are: a native call (a DirectCall,
        # or a ChainCall for an f32 chain) checks every buffer as execute_arrays
        # does, and runs the call.
        self.direct: Any = None
        if not crop and out_perm is None and not self.any_copy:
            self.direct = op.direct_call(output_shape, dtype)

    def run_direct(self, arrays: Sequence[Any], out: Any) -> Any:
        """The hot path: `arrays` (and `out`, or a new result) straight to oneDNN,
        which checks dtype, shape, strides, writeability and overlap before it
        runs. Returns the result, or None when there is no direct path or
        anything was refused (nothing ran): the caller's checked path then names
        the argument at fault, or converts it (a torch tensor, say)."""
        if self.direct is None:
            return None
        return self.direct.run(_compiled.stream(), arrays, out)

    def run(self, inputs: list[np.ndarray], out: np.ndarray) -> np.ndarray:
        """Execute on checked `inputs`, writing `out` (of ``output_shape``)."""
        target = out if self.out_perm is None else out.transpose(self.out_perm)
        if not self.crop:
            self.op.execute(inputs, target)
            return out
        fmt = self.data_format
        if self.crop_input is not None:  # a backward op: drop diff_dst's unread tail
            inputs = list(inputs)
            inputs[self.crop_input] = _arrays.crop(inputs[self.crop_input], fmt, self.crop)
            self.op.execute(inputs, target)
            return out
        self.op.execute(inputs, _arrays.crop(target, fmt, self.crop))
        # The left-out outputs lie outside every kernel window: they are
        # ConvTranspose's bias, or zeros (its bias-less form, ConvolutionBackwardData).
        _arrays.fill_cropped(target, fmt, self.crop, inputs[2] if len(inputs) > 2 else None)
        return out


def prepare(cp: _plan.CallPlan, inputs: Sequence[np.ndarray], out_meta: Optional[tuple] = None,
            constant: Optional[int] = None,
            copied: Optional[tuple[bool, ...]] = None,
            tune: bool = False, threads: Optional[int] = None, busy_threads: int = 0) -> Prepared:
    """Build the planned call `cp` (``_plan.plan_call``) for `inputs` (from
    ``_arrays.as_input``): compile it, and with `tune` time its formulations.

    `out_meta` is the (shape, element strides) of a caller's `out`, None for a
    fresh C-contiguous result. `constant` is the position of an input to
    compile in as constant (its data is copied). `copied` says which of the
    caller's arrays ``_arrays.as_input`` had to copy (a repeated call copies
    those again); by default, those `inputs` oneDNN cannot describe. With
    `tune`, every lowering of the problem is compiled and timed (on the given
    inputs and a result array of its own), and the fastest is kept. `threads`
    fixes the OpenMP thread count (0: oneDNN's default); by default
    ``_plan.threads`` chooses, and tuning tries both, and where that is all of
    them, `busy_threads` (> 0: the count others leave on a busy machine,
    ``_compiled.busy_threads``) replaces it.
    """
    if constant is not None and cp.names[constant] == "weights":
        cp = _plan.with_constant_weights(cp)
    kind, dtype, plan, input_shapes = cp.kind, cp.dtype, cp.plan, cp.input_shapes
    native, way, result_shape, out_perm = cp.native, cp.way, cp.result_shape, cp.out_perm
    if copied is None:
        copied = tuple(not _arrays.describable(a) for a in inputs)
    copy_inputs = copied
    arrays = [np.ascontiguousarray(a) if not _arrays.describable(a) else a for a in inputs]
    layouts = [_compiled.meta(a) for a in arrays]  # what is compiled for (before any crop)
    if tune:
        for array, original in zip(arrays, inputs):
            if array is not original:  # the package's own copy, e.g. of an input given as a shape:
                array.fill(1)       # time it on plain numbers (no NaN, no subnormal)
    if out_meta is not None and tuple(out_meta[0]) != result_shape:
        out_meta = None  # a wrong `out`: the call refuses it (check_out) after this
    if out_meta is None:
        # Sizes no machine holds stop here, before compiling; np.empty only
        # reserves address space, so this costs the first call nothing.
        target = _arrays.allocate(kind, result_shape, dtype)
    else:
        # The caller's `out` layout. Only its description is compiled, so one
        # element of memory stands for it, unless tuning executes into it.
        span = 1 + sum((d - 1) * s for d, s in zip(out_meta[0], out_meta[1])) if tune else 1
        target = np.lib.stride_tricks.as_strided(np.empty(max(span, 1), dtype), out_meta[0],
                                                 [s * dtype.itemsize for s in out_meta[1]])
    if out_perm is not None:
        target = target.transpose(out_perm)
    crop_input = None
    if way.crop:  # every formulation of a problem has the same crop
        index = _lowering.geometry_tensor(cp.spec.kind)
        if index >= 0:
            crop_input = index
            arrays[index] = _arrays.crop(arrays[index], plan.attrs.data_format, way.crop)
        else:
            target = _arrays.crop(target, plan.attrs.data_format, way.crop)
    constants = {constant: arrays[constant]} if constant is not None else None
    size = cp.size
    chosen_threads = threads is None
    # A decision the tuning database holds for this problem on this machine:
    # compile only the formulation it names, and time nothing.
    tune_key, decision, decided = None, None, None
    if tune and not way.unreached:
        # The formulations this package version has for the problem belong to the key:
        # a decision made among fewer (before a new one existed) is measured again.
        ways = sorted(w.lowering.split(" (")[0]
                      for w in [native, *_lowering.alternatives(plan, input_shapes, native)])
        tune_key = _tuning_db.problem_key(
            [cp.kind, dtype_name(dtype), native.kind, native.attrs, native.crop,
             layouts, _out_layout(out_meta), constant,
             "auto" if chosen_threads else threads, ways])
        decision = _tuning_db.tuning_database().get(tune_key)
        decided = _decided_way(decision, cp)
        if decided is not None and decision is not None and _tuning.rechecking() \
                and not decision.get("default", False):
            decided = None  # measured again: another formulation than the default was kept
    in_f32: Optional[bool] = None  # the form the rules choose (_compile)
    if decided is not None:
        way, threads, in_f32 = decided
    elif threads is None:
        threads = _plan.threads(size)
    if chosen_threads and busy_threads and not threads:
        threads = busy_threads
    op: Any = None
    if way.unreached:  # no kernel window reaches the output: nothing to compile
        op = _unreached.Unreached(kind, dtype_name(dtype), [_compiled.meta(a) for a in arrays],
                                  _compiled.meta(target), constants)
    elif way is not native:
        try:
            op = _compile(way, dtype_name(dtype), arrays, target, constants, threads, size.flops,
                          in_f32)
        except UnsupportedError:
            way, decided = native, None  # the faster formulation is a preference, not a need
    if op is None:
        try:
            op = _compile(native, dtype_name(dtype), arrays, target, constants, threads, size.flops,
                          in_f32)
        except UnsupportedError as exc:
            if native.kind == cp.spec.kind:
                raise
            # Name the op the caller asked for, not only the one it was lowered to.
            raise UnsupportedError(f"{kind}, lowered to {native.lowering}: {exc.message}",
                                   exc.status) from None
    op.lowering = lowering_of(op, way)
    if decided is not None and decision is not None:
        op.tuning = dict(decision.get("seconds", {})) or None
        op.tuning_verdict = f"from the tuning database: {decision.get('verdict', 'fastest')}"
    elif tune_key is not None and target.size:
        default = op
        op, stored = _tune(op, way, plan, input_shapes, native, arrays, target, constants,
                           size.flops, chosen_threads)
        if stored:
            _tuning_db.tuning_database().put(tune_key, {
                "problem": _problem_text(cp, inputs, result_shape), "kind": op.kind,
                "lowering": op.lowering, "threads": op.threads, "seconds": op.tuning or {},
                "in_f32": op.runs_in_f32, "verdict": op.tuning_verdict,
                "default": op is default})
    return Prepared(op, result_shape, dtype, copy_inputs, crop_input, way.crop,
                    plan.attrs.data_format, out_perm)


def _out_layout(out_meta: Optional[tuple]) -> Optional[tuple]:
    """A caller's `out` as the tuning key sees it: None when it is C-contiguous,
    which compiles the same call as a new result."""
    if out_meta is None or tuple(out_meta[1]) == _arrays.dense_strides(out_meta[0]):
        return None
    return tuple(out_meta[0]), tuple(out_meta[1])


def _decided_way(decision: Optional[dict[str, Any]], cp: _plan.CallPlan
                 ) -> Optional[tuple[_lowering.NativeOp, int, Optional[bool]]]:
    """The formulation, thread count and form (in f32 or not; None: as the rules say)
    a stored `decision` names for `cp`, or None (no decision, or one naming a
    formulation this problem no longer has)."""
    if decision is None:
        return None
    # The default first: a decision for it keeps the default's description.
    ways = [cp.way, cp.native, *_lowering.alternatives(cp.plan, cp.input_shapes, cp.native)]
    for way in ways:
        if way.kind == decision.get("kind"):
            return way, int(decision.get("threads", 0)), decision.get("in_f32")
    return None


def _problem_text(cp: _plan.CallPlan, inputs: Sequence[np.ndarray], result: Sequence[int]) -> str:
    """A problem as a person reads it in the tuning database."""
    a = cp.plan.attrs
    arrays = ", ".join(f"{n} {tuple(x.shape)}" for n, x in zip(cp.names, inputs))
    return (f"{cp.kind} {cp.dtype_name} {a.data_format}/{a.weights_format}: {arrays} -> "
            f"{tuple(result)}; strides {a.strides}, groups {a.groups}, dilations {a.dilations}")


def _compile(way: _lowering.NativeOp, dtype: str, arrays: list[np.ndarray], target: np.ndarray,
             constants: Optional[dict[int, np.ndarray]], threads: int,
             flops: Optional[int] = None, in_f32: Optional[bool] = None) -> Any:
    """`way` compiled for the call's arrays and result: a CompiledOp, or a ChainOp
    where this CPU's oneDNN has no kernel for it in a bf16/f16 `dtype`, or only its
    reference kernel (``_impl.kernels``), or one slower than the chain
    (``_kernels.faster_in_f32``, for an op of `flops`; None: unknown), or fails to
    compile it in that dtype. `in_f32` overrides the speed rule where oneDNN has an
    optimized kernel (tuning measures both forms). A chain runs its batch in parts
    where that pays (``_batch_parts.chain_rows``)."""
    metas, out = [_compiled.meta(a) for a in arrays], _compiled.meta(target)
    if _lowering.formed(way) is not None:  # an op on the package's views of the arrays
        return formed_op(way, dtype, metas, out, constants, threads)
    taken = [arrays[i].shape for i in way.input_order] if way.input_order else [a.shape for a in arrays]
    args = (way.kind, way.attrs, dtype, metas, out, constants, way.input_order, threads)
    parts = _batch_parts.op_rows(way.kind, dtype, way.attrs.get("data_format", ""), taken, target.shape,
                                 flops, threads, _lowering.LINKED, _lowering.HOST_ISA) \
        if flops is not None else 0
    if dtype not in _arrays.LOW_PRECISION:  # f32 has optimized kernels on every ISA
        return _one_op(*args, rows=parts)  # (kernels.probed): nothing to ask or weigh
    kernel = _kernels.probed(way.kind, way.attrs, dtype, taken, target.shape)
    rows = _batch_parts.chain_rows(way.kind, taken, target.shape, flops) if flops is not None else 0
    faster = in_f32 if in_f32 is not None else flops is not None and _kernels.faster_in_f32(
        kernel, way.kind, way.attrs, dtype, flops, bias=len(taken) > 2)
    if kernel is not None and (kernel.status != "native" or faster):
        return _as_f32.ChainOp(*args, reason=_kernels.reason(kernel, dtype),
                                needed=kernel.status in ("none", "wrong"), rows=rows)
    try:
        return _one_op(*args, rows=parts)
    except UnsupportedError as exc:
        if dtype not in _arrays.LOW_PRECISION:
            raise
        try:  # a kernel the probe did not foresee is missing: f32 has them all
            return _as_f32.ChainOp(*args, reason=_kernels.reason(None, dtype), needed=True,
                                    rows=rows)
        except UnsupportedError:
            raise exc from None


def _one_op(kind: str, attrs: dict[str, Any], dtype: str, metas: list[tuple], out: tuple,
            constants: Optional[dict[int, np.ndarray]], order: tuple[int, ...], threads: int,
            rows: int) -> Any:
    """The op (``CompiledOp``'s arguments) as one compiled partition for parts of `rows`
    samples (0: the whole batch), or as a chain where its bias runs apart
    (``_impl.epilogue_apart``: oneDNN 3.2 would add it more than once, or its kernel adds
    it far slower): the kernel without it, then a BiasAdd."""
    args = (kind, attrs, dtype, metas, out, constants, order, threads)
    if len(metas) > 2 and _epilogue_apart.on_deconvolution(kind):
        taken = order or tuple(range(len(metas)))
        part, batched = _batch_parts.split(kind, taken, rows, out[0][0])
        shapes = [_batch_parts.part_shape(metas[i][0], part * (i in batched)) for i in taken]
        why = _epilogue_apart.reason(kind, attrs, shapes, _batch_parts.part_shape(out[0], part),
                                     (dtype,) * 4, threads)
        if why is not None:
            return _as_f32.ChainOp(*args, reason=why, rows=rows, in_f32=False)
    return _compiled.CompiledOp(*args, rows=rows)


def formed_op(way: _lowering.NativeOp, dtype: str, metas: list[tuple], out: tuple,
              constants: Optional[dict[int, np.ndarray]] = None, threads: int = 0,
              compile: bool = True) -> Any:
    """The formulation on views of the arrays that `way` names (``_lowering.formed``),
    made for arrays of `metas` and a result of `out` ((shape, element strides) each);
    unless `compile`, only described (its ``graph_ops`` for a reproducer)."""
    if _lowering.formed(way) == "split":  # two calls, each made as a call of its own
        return _split_form.SplitForm(way.kind, way.attrs, dtype, metas, out, constants, way.input_order,
                                     threads, compile=compile, build=_split_part)
    made = {"matmul": _matmul_form.MatMulForm, "packed": _packed_form.PackedForm,
            "polyphase": _polyphase_form.PolyphaseForm,
            "subpixel": _subpixel_form.SubpixelForm}[_lowering.formed(way) or ""]
    return made(way.kind, way.attrs, dtype, metas, out, constants, way.input_order, threads,
                compile=compile)


def _split_part(kind: str, attrs: dict[str, Any], metas: list, out: tuple, threads: int,
                compile: bool) -> Any:
    """One part of a channel split (``_impl.split_form``) on arrays of `metas` and a result
    of `out`: planned, lowered and compiled as a call of its own is (f32: the form's)."""
    input_shapes = [m[0] for m in metas]
    plan = shapes.plan(kind, input_shapes, **attrs)
    flops = _plan.problem(plan, input_shapes).flops
    way = _lowering.preferred(plan, input_shapes, _lowering.lower(plan, input_shapes), "f32", flops=flops)
    if _lowering.formed(way) is not None:
        return formed_op(way, "f32", metas, out, None, threads, compile)
    if not compile:  # described only (a reproducer): the op as oneDNN would get it
        return _split_form.Described(way.kind, way.attrs, metas, out, way.input_order)
    standing = [_standing(m) for m in metas]  # (only their layouts are compiled)
    return _compile(way, "f32", standing, _standing(out), None, threads, flops)


def _standing(meta: tuple) -> np.ndarray:
    """An f32 array of `meta`'s (shape, element strides) on one element of memory: it
    stands for an array to compile for, never read or written."""
    return np.lib.stride_tricks.as_strided(np.empty(1, np.float32), tuple(meta[0]),
                                           tuple(4 * s for s in meta[1]))


def lowering_of(op: Any, way: _lowering.NativeOp) -> str:
    """How the call runs (``Operation.lowering``): `way`'s rewrite, the f32 chain, and
    the batch in parts (``_impl.batch_parts``)."""
    chain = []
    if isinstance(op, _as_f32.ChainOp):
        chain += [f"in f32 between TypeCasts ({op.reason}), {_casts.describe(op.chain.converters)}"] \
            if op.runs_in_f32 else []
        chain += [op.chain.split.why] if op.chain.split else []
    rows = getattr(op, "rows", 0)
    parts = [f"{rows} sample{'s' if rows > 1 else ''} at a time"] if rows else []
    # (an f32 chain's steps say how the op runs: "native" is said only without them)
    named = [] if way.lowering == "native" and chain else [way.lowering]
    return ", ".join(named + chain + parts)


def _tune(op: _compiled.CompiledOp, chosen: _lowering.NativeOp, plan: shapes.Plan,
          input_shapes: list, native: _lowering.NativeOp, arrays: list[np.ndarray],
          target: np.ndarray, constants: Optional[dict[int, np.ndarray]], flops: int,
          other_threads: bool) -> tuple[_compiled.CompiledOp, bool]:
    """The fastest of `op` (formulation `chosen`) and the problem's other lowerings (same
    crop, same arrays; `native` is ``_lowering.lower``'s answer, which `op` may run
    another way), in both forms where a bf16/f16 op has them (oneDNN's own kernel and
    the f32 chain),
    each also on the other thread count where `other_threads` (the caller did not
    fix the count) and the problem (of `flops`) is small enough for the choice to be
    close."""
    counts = [op.threads]
    if other_threads and _core.can_limit_threads() and flops < _TUNE_THREADS_BELOW:
        counts.append(1 if op.threads != 1 else 0)
    candidates = []
    # bf16/f16 where oneDNN has an optimized kernel: that kernel, and the f32 chain.
    forms: list[Optional[bool]] = [None]
    if op.dtype in _arrays.LOW_PRECISION and not (isinstance(op, _as_f32.ChainOp) and op.runs_in_f32 and op.needed):
        forms = [False, True]
    # Every formulation has its own op kind; `op` is one of them (the default).
    for way in [native, *_lowering.alternatives(plan, input_shapes, native)]:
        for threads in counts:
            for in_f32 in forms:
                if way.kind == op.kind and threads == op.threads and \
                        in_f32 in (None, op.runs_in_f32):
                    candidates.append(op)
                    continue
                try:
                    compiled = _compile(way, op.dtype, arrays, target, constants, threads, flops,
                                        in_f32)
                except UnsupportedError:
                    continue  # oneDNN 3.2 cannot compile this formulation here; the others remain
                if in_f32 is not None and compiled.runs_in_f32 != in_f32:
                    continue  # no such form of it (oneDNN has no kernel of the dtype for it)
                compiled.lowering = lowering_of(compiled, chosen if way.kind == chosen.kind else way)
                candidates.append(compiled)
    if len(candidates) == 1:
        op.tuning_verdict = "one way only: nothing to time"
        return op, True
    # The default first: the one a candidate must beat clearly (_tuning.verdict).
    candidates.sort(key=lambda c: c is not op)
    verdict = _tuning.fastest(candidates, arrays, target)
    verdict.op.tuning, verdict.op.tuning_verdict = verdict.seconds, verdict.why
    return verdict.op, verdict.stored


def _freeze(value: Any) -> Hashable:
    """A hashable stand-in for a keyword value; bools, floats and ints stay distinct."""
    t = type(value)
    if t is int or t is str or value is None:
        return value
    if t is tuple or t is list:
        if all(type(v) is int for v in value):
            return ("seq",) + tuple(value)
        return ("seq?", tuple(_freeze(v) for v in value))
    if t is np.ndarray:
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    return (t.__qualname__, repr(value))


def _python_signature(kind: str, arrays: Sequence[Any], out: Any,
                      values: tuple) -> Optional[Hashable]:
    """The cache key of a call that ``_core.call_signature`` leaves out (a value
    such as a bool, a float or a NumPy integer, whose type it keeps), or None
    when an argument is not a plain ndarray (such calls are not cached)."""
    metas = []
    for a in arrays:
        if type(a) is not np.ndarray:
            return None
        metas.append((a.shape, a.strides, a.dtype))
    if out is not None:
        if type(out) is not np.ndarray:
            return None
        out = (out.shape, out.strides, out.dtype)
    return (kind, tuple(metas), out, tuple([_freeze(v) for v in values]))


def signature_values(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A call's keyword `values` as its cache signature holds them: with the thread
    count a busy machine leaves new calls (``machine_load.LIMIT``; 0 on a quiet one)
    and the calling thread's OpenMP thread count (``_compiled.call_threads``), so that
    a call compiled for other threads is another entry."""
    return values + _compiled.call_threads()


def run(kind: str, names: Sequence[str], arrays: tuple[Any, ...], out: Any,
        keys: tuple[str, ...], values: tuple[Any, ...]) -> Any:
    """The functional API's body: find or prepare the call, then run it.

    `keys` name the keyword `values` (the public keywords, the shape argument
    included). Returns a new NumPy array, or the caller's own `out` object (an
    ndarray, a torch tensor, ...) written in place.
    """
    # A cached call that can run on the caller's arrays as they are: one native
    # call finds and runs it (its key is the call_signature below).
    keyed = signature_values(values)
    result = _compiled.CACHE.call(_compiled.stream(), kind, arrays, out, keyed)
    if result is not None:
        return result
    if not all(type(a) is np.ndarray for a in arrays) or not (out is None or type(out) is np.ndarray):
        # Other libraries' arrays (torch tensors, DLPack exporters, buffers) as NumPy
        # views of their memory (no copy): the call is then cached and runs natively
        # as for ndarrays, instead of being planned again on every call.
        views = tuple(_arrays.to_numpy(n, a) for n, a in zip(names, arrays))
        if out is None:
            return run(kind, names, views, None, keys, values)
        _arrays.check_no_grad("out", out)
        run(kind, names, views, _arrays.to_numpy("out", out), keys, values)
        return out
    # Any other call. The cache key: the usual call (ndarrays; None, int, str or
    # int-sequence values) encoded natively as bytes, any other in Python.
    key = _core.call_signature(kind, arrays, out, keyed)
    native_key = key is not None
    if key is None:
        key = _python_signature(kind, arrays, out, keyed)
    prepared = _compiled.CACHE.lookup(key) if key is not None else None
    if prepared is not None and not native_key:
        # CACHE.call above already tried the direct call under a native key.
        # The signature settled every check but two, which the direct call makes
        # before oneDNN runs: `out` is writeable and shares no memory with an input.
        result = prepared.run_direct(arrays, out)
        if result is not None:
            return result
    if prepared is None:
        inputs = [_arrays.as_input(n, a) for n, a in zip(names, arrays)]
        out_meta = None
        if out is not None:
            view = _arrays.to_numpy("out", out)
            if _arrays.describable(view):
                out_meta = _compiled.meta(view)
        # as_input returns the caller's own array unless it had to copy it.
        copied = tuple(i is not a for i, a in zip(inputs, arrays))
        cp = _plan.plan_call(kind, names, inputs, dict(zip(keys, values)))
        prepared = prepare(cp, inputs, out_meta, copied=copied, tune=_tune_new,
                           busy_threads=keyed[-2])
        if key is not None:
            _compiled.CACHE.store(key, prepared, prepared.op.compile_seconds, prepared.direct)
    elif prepared.any_copy:
        inputs = [np.ascontiguousarray(a) if c else a for a, c in zip(arrays, prepared.copy_inputs)]
    else:
        inputs = list(arrays)
    if out is None:
        return prepared.run(inputs, _arrays.allocate(kind, prepared.output_shape, prepared.dtype))
    prepared.run(inputs, _arrays.check_out(out, prepared.output_shape, prepared.dtype, inputs))
    return out

"""The benchmark suite: this package against PyTorch and the oneDNN C++ floor.

Run ``python benchmarks/run.py`` on a quiet machine (a tool of the repository,
not part of the installed package). Every (case, op, dtype, data format) is measured
for each system in interleaved rounds (one batch of calls per system per round, in an
order ``round_order`` balances). The reported time is the best round's per-call time,
as benchdnn reports its minimum: on a shared VM other tenants only ever add time
(steal), so the minimum is the estimate that repeats; the medians are kept as well.
The systems:

* ``functional``: ``onednn_graph.conv_transpose(..., out=buf)`` and friends,
* ``compiled``: an ``onednn_graph.compile_op`` operation called with ``out=``,
* ``tuned``: the same with ``tune=True``, where the problem has another lowering
  or a thread count to choose (``_lowering.alternatives``, ``_plan.SMALL_FLOPS``),
* ``torch``: PyTorch's own kernels (``conv_transpose*d`` and
  ``aten.convolution_backward``, the functions autograd calls), when installed,
* ``cpp``: ``benchmarks/single_op.cpp``, the same single-op partition (the op
  the package hands oneDNN, after any lowering, on the same OpenMP thread
  count) driven through the C++ API; for a call run as another op on views of its
  arrays (the MatMul of ``_impl.matmul_form``, the Convolution of
  ``_impl.packed_form``), that bare op on the same tensors, without the package's
  rearrangement.

FLOPs are ``_plan.problem(...).flops`` (the package's one count, the CLI's too):
2 * N * C_in * (C_out / groups) * the products of the equivalent ConvTranspose that
land inside its dst, the same for the four ops.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, TypeVar

import numpy as np

from onednn_graph import _core, ops, shapes
from onednn_graph._impl import (as_f32 as _as_f32, attrs as _attrs, call as _call,
                                compiled as _compiled, arrays as _arrays,
                                formed as _formed, version as _version, plan as _plan, registry)
from onednn_graph.operation import compile_op


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    n: int
    c_in: int
    c_out: int
    spatial: tuple[int, ...]
    k: int
    s: int
    p: int
    groups: int = 1


CASES = [
    Case("dcgan-1", 16, 512, 256, (4, 4), 4, 2, 1),
    Case("dcgan-2", 16, 128, 64, (16, 16), 4, 2, 1),
    Case("unet-1", 4, 256, 128, (32, 32), 2, 2, 0),
    Case("unet-2", 2, 128, 64, (64, 64), 2, 2, 0),
    Case("hifigan-1d", 4, 512, 256, (256,), 16, 8, 4),
    Case("unet-3d", 2, 64, 32, (8, 16, 16), 2, 2, 0),
    Case("depthwise", 8, 64, 64, (32, 32), 4, 2, 1, groups=64),
    Case("tiny", 1, 8, 8, (4, 4), 2, 2, 0),
    # kernel == stride at large kernels and few channels: a ViT-B/16 patch embedding
    # and a ConvNeXt-T stem (their data gradients, and ConvTranspose of that geometry)
    Case("vit-b16", 8, 768, 3, (14, 14), 16, 16, 0),
    Case("convnext-stem", 8, 96, 3, (56, 56), 4, 4, 0),
]
#: Run only when named (``--cases``): too large for every run. oneDNN's own
#: conv_bwd_d_3d.json problem (ConvolutionBackwardData, 32 -> 3 channels, 3x3x3 kernel,
#: 116x132x132 output), here with the other three ops of its geometry.
ON_REQUEST = [Case("conv-bwd-d-3d", 1, 32, 3, (114, 130, 130), 3, 1, 0)]


def selected(names: str) -> list[Case]:
    """The cases `names` (comma-separated) names, or every case of ``CASES``."""
    wanted = set(filter(None, names.split(",")))
    unknown = wanted - {c.name for c in CASES + ON_REQUEST}
    if unknown:
        raise SystemExit(f"unknown case(s) {', '.join(sorted(unknown))}")
    return [c for c in CASES + ON_REQUEST if c.name in wanted or (not wanted and c in CASES)]


OPS = ("ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
       "ConvolutionBackwardData")
SHORT = dict(zip(OPS, ("CT", "CTBD", "CTBW", "CBD")))
FORMATS = {"NCX": ("IOX", "OIX"), "NXC": ("XOI", "XIO")}  # CT family, CBD


def flops(p: "Problem") -> int:
    """The FLOPs of `p`, counted by the package's one rule (``_impl.plan.problem``)."""
    input_shapes = [a.shape for a in p.arrays]
    return _plan.problem(shapes.plan(p.kind, input_shapes, **p.kwargs), input_shapes).flops


@dataclasses.dataclass
class Problem:
    """One benchmark configuration: arrays, the functional call, and its keywords."""

    case: Case
    kind: str
    dtype: str
    data_format: str
    function: Callable[..., Any]
    arrays: list[np.ndarray]
    kwargs: dict[str, Any]
    out: np.ndarray


def problem(c: Case, kind: str, dtype: str, fmt: str, seed: int = 0) -> Problem:
    rng = np.random.default_rng(seed)
    nd = len(c.spatial)
    np_dtype = _arrays.numpy_dtype(dtype)
    ct_wf, conv_wf = FORMATS[fmt]
    attrs = dict(strides=c.s, pads_begin=c.p, pads_end=c.p, groups=c.groups, data_format=fmt)
    x_shape = shapes.data_shape_for(fmt, c.n, c.c_in, c.spatial)
    w_shape = shapes.weights_shape_for(
        _attrs.normalize("ConvTranspose", nd, weights_format=ct_wf, groups=c.groups),
        c.c_in, c.c_out, (c.k,) * nd)
    y_shape = shapes.output_shape("ConvTranspose", [x_shape, w_shape], weights_format=ct_wf, **attrs)

    def rand(shape: tuple[int, ...]) -> np.ndarray:
        return rng.uniform(-1, 1, shape).astype(np_dtype)

    x, w, y = rand(x_shape), rand(w_shape), rand(y_shape)
    if kind == "ConvTranspose":
        return Problem(c, kind, dtype, fmt, ops.conv_transpose, [x, w],
                       dict(attrs, weights_format=ct_wf), np.empty(y_shape, np_dtype))
    if kind == "ConvTransposeBackwardData":
        return Problem(c, kind, dtype, fmt, ops.conv_transpose_backward_data, [y, w],
                       dict(attrs, weights_format=ct_wf), np.empty(x_shape, np_dtype))
    if kind == "ConvTransposeBackwardWeights":
        return Problem(c, kind, dtype, fmt, ops.conv_transpose_backward_weights, [x, y],
                       dict(attrs, weights_format=ct_wf, weights_shape=w_shape),
                       np.empty(w_shape, np_dtype))
    # The convolution whose data gradient has the same geometry: src = y, dst = x;
    # its weights (OIX / XIO) are the same memory as the ConvTranspose's (IOX / XOI).
    return Problem(c, kind, dtype, fmt, ops.convolution_backward_data, [x, w],
                   dict(attrs, weights_format=conv_wf, dst_shape=y_shape), np.empty(y_shape, np_dtype))


def _torch_call(p: Problem, torch: Any) -> Callable[[], Any]:
    """PyTorch's kernels on the same memory (NXC data as channels-last views)."""
    nd = len(p.case.spatial)

    def t(a: np.ndarray, channels_axis: bool = True) -> Any:
        if a.dtype == _arrays.numpy_dtype("bf16"):
            tensor = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        else:
            tensor = torch.from_numpy(a)
        if p.data_format == "NXC" and channels_axis:
            tensor = tensor.permute(0, nd + 1, *range(1, nd + 1))
        return tensor

    def weights(a: np.ndarray) -> Any:
        tensor = t(a, channels_axis=False)
        if p.data_format == "NXC":  # XOI / XIO -> IOX / OIX views
            tensor = tensor.permute(nd + 1, nd, *range(nd))
        return tensor

    c = p.case
    common = dict(stride=[c.s] * nd, padding=[c.p] * nd, dilation=[1] * nd, groups=c.groups)
    F = torch.nn.functional
    backward = torch.ops.aten.convolution_backward
    if p.kind == "ConvTranspose":
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        x, w = t(p.arrays[0]), weights(p.arrays[1])
        return lambda: fn(x, w, None, common["stride"], common["padding"], 0, c.groups)
    if p.kind in ("ConvTransposeBackwardData", "ConvTransposeBackwardWeights"):
        if p.kind == "ConvTransposeBackwardData":
            dy, w = t(p.arrays[0]), weights(p.arrays[1])
            # The forward input only gives its shape and memory format, which PyTorch's
            # backward follows: channels-last for NXC data, as the caller's would be (a
            # contiguous one made PyTorch convert channels-last diff_dst on every call).
            x = t(np.empty_like(p.out))
            mask = [True, False, False]
        else:
            x, dy = t(p.arrays[0]), t(p.arrays[1])
            w = torch.empty(weights(np.empty(p.out.shape, p.out.dtype)).shape, dtype=x.dtype)
            mask = [False, True, False]
        return lambda: backward(dy, x, w, None, common["stride"], common["padding"],
                                common["dilation"], True, [0] * nd, c.groups, mask)
    dy, w = t(p.arrays[0]), weights(p.arrays[1])
    src = t(np.empty_like(p.out))  # shape and memory format only, as above
    return lambda: backward(dy, src, w, None, common["stride"], common["padding"],
                            common["dilation"], False, [0] * nd, c.groups, [True, False, False])


def floor_input(p: Problem) -> str:
    """What the C++ program reads first: `p`'s compiled op (the package's lowering
    and thread count), up to its "ready" line."""
    prepared = _call.prepare(_plan.plan_call(p.kind, ("a", "b"), p.arrays, p.kwargs), p.arrays)
    op = prepared.op
    if isinstance(op, _as_f32.ChainOp):
        raise NotImplementedError(f"{op.reason}: it runs in f32 between TypeCasts, and the C++ "
                                  "floor drives single-op partitions")
    if isinstance(op, _formed.Formed):
        # An op run as another on views of the arrays (the kernel == stride MatMul, the
        # packed Convolution): the floor is that bare partition on the same tensors,
        # without the package's copies and Python path. The polyphase form runs one
        # Convolution per phase: no single partition.
        if op.inner is None:
            raise NotImplementedError(f"{op.lowering}: several partitions")
        op = op.inner
    if prepared.crop or prepared.out_perm is not None or op.compiled is None:
        raise NotImplementedError("the C++ floor drives plain single-op problems only")
    lines = [f"kind {op.kind}", f"dtype {op.dtype}", f"threads {op.threads}"]
    for lt in op.inputs:
        lines.append(f"input {_join(lt.shape)} {_join(lt.strides)}")
    lines.append(f"output {_join(op.output.shape)} {_join(op.output.strides)}")
    for name, value in op.attrs.items():
        if isinstance(value, (list, tuple)):
            lines.append(f"ints {name} {_join(value)}")
        elif isinstance(value, int):
            lines.append(f"int {name} {value}")
        else:
            lines.append(f"str {name} {value}")
    return "\n".join(lines) + "\nready\n"


class CppFloor:
    """The C++ program serving one compiled problem over a pipe."""

    def __init__(self, binary: Path, p: Problem) -> None:
        spec = floor_input(p)
        self.process = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1)
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(spec)
        reply = self.process.stdout.readline().split()
        if not reply or reply[0] != "compiled":
            raise RuntimeError(f"C++ floor failed: {' '.join(reply)}")

    def first(self) -> float:
        """Seconds of graph to compiled partition plus one execution, again, after
        emptying oneDNN's caches (the process's own first call also paid one-time
        costs: the thread pool, CPU dispatch)."""
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write("first\n")
        reply = self.process.stdout.readline().split()
        return (float(reply[1]) + float(reply[3])) * 1e-3

    def memory(self) -> tuple[int, int, int]:
        """(RSS before, peak RSS during) one execution in kB, and the most bytes
        oneDNN held at once during it, after a warm-up call."""
        assert self.process.stdin and self.process.stdout
        self.run(1)
        self.process.stdin.write("memory\n")
        _, before, peak, onednn = self.process.stdout.readline().split()
        return int(before), int(peak), int(onednn)

    def run(self, n: int) -> float:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(f"run {n + _WARM}\n")
        times = [float(v) for v in self.process.stdout.readline().split()[1 + _WARM:]]
        return sum(times) / len(times) * 1e-6

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
        self.process.wait()


def _join(values: Any) -> str:
    return ",".join(str(int(v)) for v in values)


def build_cpp(source: Path, build_dir: Path) -> Optional[Path]:
    """Compile benchmarks/single_op.cpp against the environment's oneDNN (headers from
    onednn-devel-cpu-gomp), or None when that is not possible: no headers, no g++, or
    a oneDNN whose CPU runtime is not OpenMP (PyPI's 3.13 is SYCL: the program would
    need the package's SYCL engine set-up, cpp/sycl_engine.cpp)."""
    prefix = Path(sys.prefix)
    include, lib = prefix / "include", prefix / "lib"
    config = include / "oneapi" / "dnnl" / "dnnl_config.h"
    if not (include / "oneapi" / "dnnl" / "dnnl_graph.hpp").exists() or shutil.which("g++") is None \
            or "#define DNNL_CPU_RUNTIME DNNL_RUNTIME_OMP" not in config.read_text():
        return None
    build_dir.mkdir(parents=True, exist_ok=True)
    binary = build_dir / "single_op"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["g++", "-O2", "-std=c++17", "-fopenmp", str(source), f"-I{include}", f"-L{lib}",
                        "-l:libdnnl.so.3", f"-Wl,-rpath,{lib}", "-o", str(binary)], check=True)
    return binary


#: Untimed calls before each batch. After a pause, the first call pays for waking
#: the OpenMP threads and the VM's idle vCPUs (measured: up to hundreds of
#: microseconds), which would dominate a batch of tiny calls.
_WARM = 2


def publish(text: str, out: Optional[str]) -> int:
    """Print a benchmark script's report and write it to `out` too (when given); the
    script's exit status."""
    print(text)
    if out:
        Path(out).write_text(text)
    return 0


_T = TypeVar("_T")


def round_order(names: Sequence[_T], r: int) -> list[_T]:
    """The order in which round `r` of interleaved rounds runs `names`: a shuffle drawn
    from a generator seeded by the pair of rounds, reversed in the pair's second round, so
    that every runner runs before and right after every other equally often (the same
    order in every run of a benchmark). A rotation runs each runner right after the same
    other in most rounds, and the second of two similar workloads in a row finds their
    code and data warm: in ``models.py``, with a copy of stock's layers in place of the
    converted ones, the rotated "layers alone" ratio came out 0.72-0.99 (2026-11-30)."""
    order = list(names)
    random.Random(r // 2).shuffle(order)
    return order if r % 2 == 0 else order[::-1]


def calls_per_round(runs: Sequence[Callable[[], Any]], fewest: int, round_ms: float) -> int:
    """How many calls each runner makes per round of interleaved rounds: at least `fewest`,
    and enough that the slowest of `runs` (timed once each, warm) fills `round_ms`. A round of
    a few short calls is mostly the machine's jitter: MONAI's 4 ms GAN generator at 2 calls
    a round ranged 0.58-1.20 converted/stock by round, and its median moved 0.99-1.12 from
    run to run (2026-11-30, Zen 4)."""
    slowest = 0.0
    for fn in runs:
        start = time.perf_counter()
        fn()
        slowest = max(slowest, time.perf_counter() - start)
    return max(fewest, math.ceil(round_ms / 1e3 / slowest) if slowest > 0 else fewest)


def _timed(fn: Callable[[], Any], n: int) -> float:
    for _ in range(_WARM):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


_SETTLE = 0.05  # seconds between batches (see measure)
_FIRST_REPEATS = 5  # cold first calls per system, alternating; the fastest is reported


def first_call(p: Problem) -> float:
    """Seconds of the functional API's first call of `p`: checks, lowering,
    partitioning, compilation and one execution, with every cache empty (this
    package's and oneDNN's), as in a process that never saw the problem."""
    _compiled.CACHE.clear()
    _core.clear_onednn_caches()
    start = time.perf_counter()
    p.function(*p.arrays, **p.kwargs, out=p.out)
    return time.perf_counter() - start


def measure(p: Problem, binary: Optional[Path], torch: Any, rounds: int,
            target: float) -> dict[str, Any]:
    """Best and median per-call seconds of each system over interleaved rounds,
    and both first calls."""
    # The functional API's input names, in order (a ConvTranspose here has no bias).
    inputs: dict[str, Any] = dict(zip(registry.input_names(p.kind), p.arrays))
    compiled_op = compile_op(p.kind, **inputs, **p.kwargs)
    systems: dict[str, Callable[[int], float]] = {
        "functional": lambda n: _timed(lambda: p.function(*p.arrays, **p.kwargs, out=p.out), n),
        "compiled": lambda n: _timed(lambda: compiled_op(*p.arrays, out=p.out), n),
    }
    start = time.perf_counter()
    tuned_op = compile_op(p.kind, tune=True, **inputs, **p.kwargs)  # measures, unless stored
    tune_first = time.perf_counter() - start
    if tuned_op.tuning is not None:  # the problem had more than one way to time
        systems["tuned"] = lambda n: _timed(lambda: tuned_op(*p.arrays, out=p.out), n)
    if torch is not None:
        call = _torch_call(p, torch)
        systems["torch"] = lambda n: _timed(call, n)
    floor = None
    if binary is not None:
        try:
            floor = CppFloor(binary, p)
            systems["cpp"] = floor.run
        except (NotImplementedError, RuntimeError) as exc:
            print(f"  no C++ floor: {exc}", file=sys.stderr)
    once = {}
    for name, fn in systems.items():  # warm up, and size the batches
        time.sleep(_SETTLE)
        fn(3)
        time.sleep(_SETTLE)
        once[name] = fn(3)
    batch = {name: max(1, min(2000, int(target / max(t, 1e-7)))) for name, t in once.items()}
    samples: dict[str, list[float]] = {name: [] for name in systems}
    names = list(systems)
    for r in range(rounds):
        for name in round_order(names, r):
            # Each system has its own OpenMP pool (PyTorch bundles libgomp, the C++
            # floor is another process), whose threads spin a while after a call:
            # let them go to sleep so that no system runs against another's spinning.
            time.sleep(_SETTLE)
            samples[name].append(systems[name](batch[name]))
    result: dict[str, Any] = {name: min(v) for name, v in samples.items()}
    result.update({f"{name}_median": float(np.median(v)) for name, v in samples.items()})
    # First calls: the package's, and the C++ program's (graph to compiled
    # partition, then one execution), alternating after a pause each, so that
    # both meet the same state of the machine.
    firsts: dict[str, list[float]] = {"first_call": [], "first_cpp": []}
    for _ in range(_FIRST_REPEATS):
        time.sleep(_SETTLE)
        firsts["first_call"].append(first_call(p))
        if floor is not None:
            time.sleep(_SETTLE)
            firsts["first_cpp"].append(floor.first())
    if floor is not None:
        floor.close()
    for name, values in firsts.items():
        result[name] = min(values) if values else None
        result[f"{name}_median"] = float(np.median(values)) if values else None
    # The tuned problem's first call with its decision in the tuning database, from
    # empty caches: it compiles the chosen formulation only.
    _compiled.CACHE.clear()
    _core.clear_onednn_caches()
    start = time.perf_counter()
    compile_op(p.kind, tune=True, **inputs, **p.kwargs)
    result.update(tune_first=tune_first, tune_warm=time.perf_counter() - start)
    result["lowering"] = _how(compiled_op)
    result["tuned_lowering"] = _how(tuned_op) if tuned_op.tuning is not None else None
    return result


def _how(op: Any) -> str:
    """An Operation's lowering, and its thread count where one was set."""
    return op.lowering + (f", {op.threads} thread" if op.threads else "")


def cpu_times() -> tuple[int, int]:
    """(stolen, total) CPU time of all CPUs so far, in jiffies (/proc/stat; (0, 0) where
    there is none). Steal is time this VM was ready to run while the host ran others."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0, 0
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def stolen_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    return (after[0] - before[0]) / max(1, after[1] - before[1])


#: A configuration measured while more than this share of CPU time was stolen is
#: measured again (up to _RETRIES times; the attempt with the least steal is kept).
#: This VM loses 2-6% when idle, and 2-24% in one 10 s busy interval to the next.
_MAX_STEAL = 0.10
_RETRIES = 2


def gemm_peak(binary: Optional[Path], dtype: str, size: int = 2048) -> Optional[float]:
    """GFLOP/s of a size^3 MatMul single-op partition: the machine's practical peak;
    None where the C++ program cannot run it (no oneDNN MatMul kernel for `dtype` on
    this CPU: bf16 and f16 below AVX-512)."""
    if binary is None:
        return None
    lines = ["kind MatMul", f"dtype {dtype}", f"input {size},{size} {size},1",
             f"input {size},{size} {size},1", f"output {size},{size} {size},1", "ready"]
    process = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    out, _ = process.communicate("\n".join(lines) + "\nrun 3\nrun 10\nquit\n")
    replies = out.splitlines()
    if process.returncode != 0 or len(replies) < 3:
        return None
    times = [float(v) for v in replies[2].split()[1:]]
    return 2.0 * size ** 3 / (float(np.median(times)) * 1e-6) / 1e9


_MEMORY_SNIPPET = """
import sys, tracemalloc
sys.path.insert(0, sys.argv[5])
import suite
from onednn_graph import _core
case = next(c for c in suite.CASES if c.name == sys.argv[1])
p = suite.problem(case, sys.argv[2], sys.argv[3], sys.argv[4])
# Two warm-up calls, as the C++ program makes (its first call, then memory()'s):
# glibc raises its mmap threshold when a large block is freed, so the second
# call's temporaries come from the heap and stay resident for the third.
p.function(*p.arrays, **p.kwargs, out=p.out)
p.function(*p.arrays, **p.kwargs, out=p.out)
def kb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
open("/proc/self/clear_refs", "w").write("5")  # resets VmHWM to the current RSS
before = kb("VmRSS")
_core.reset_onednn_peak()
held = _core.onednn_allocations()["current"]
tracemalloc.start()  # Python's and NumPy's allocations during the call: the binding's
p.function(*p.arrays, **p.kwargs, out=p.out)
binding = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(before, kb("VmHWM"), _core.onednn_allocations()["peak"] - held, binding)
"""


def memory(binary: Optional[Path], c: Case, kind: str, dtype: str, fmt: str) -> dict[str, Any]:
    """Memory of one call (kB), the functional API in a fresh interpreter against the
    C++ floor: peak RSS above the RSS with inputs and outputs allocated, the most
    oneDNN held at once through the engine's allocator (its scratchpad), and the
    package's Python and NumPy allocations (tracemalloc)."""
    out = subprocess.run([sys.executable, "-c", _MEMORY_SNIPPET, c.name, kind, dtype, fmt,
                          str(Path(__file__).parent)],
                         capture_output=True, text=True, check=True).stdout.split()
    p = problem(c, kind, dtype, fmt)
    result = {"case": c.name, "kind": kind, "dtype": dtype, "format": fmt,
              "io_kb": (sum(a.nbytes for a in p.arrays) + p.out.nbytes) // 1024,
              "python_kb": int(out[1]) - int(out[0]), "onednn_kb": int(out[2]) // 1024,
              "binding_kb": int(out[3]) // 1024, "cpp_kb": None, "cpp_onednn_kb": None}
    if binary is not None:
        floor = CppFloor(binary, p)
        before, peak, onednn = floor.memory()
        floor.close()
        result["cpp_kb"], result["cpp_onednn_kb"] = peak - before, onednn // 1024
    return result


def _geomean(values: list[float]) -> float:
    return float(math.exp(sum(math.log(v) for v in values) / len(values))) if values else float("nan")


def goals(rows: list[dict[str, Any]]) -> list[str]:
    """Issue 4's goals, checked on these rows (Markdown bullet lines)."""
    out = []
    with_torch = [r for r in rows if r.get("torch")]
    slow = sorted((r["functional"] / r["torch"], r) for r in with_torch
                  if r["functional"] > 1.10 * r["torch"])
    if with_torch:
        out.append(f"* Slower than 1.10x PyTorch: {len(slow)} of {len(with_torch)} configurations"
                   + (": " + ", ".join(f"{r['case']} {SHORT[r['kind']]} {r['dtype']} {r['format']} "
                                      f"{q:.2f}x" for q, r in slow[::-1]) if slow else "") + ".")
        best = [min(r["functional"], r.get("tuned") or math.inf) / r["torch"] for r in with_torch]
        tuned = [r for r in with_torch if r.get("tuned")]
        out.append(f"* With `compile_op(tune=True)` where a problem has another lowering ({len(tuned)} "
                   f"configurations; it chose another in "
                   f"{sum(r['tuned_lowering'] != r['lowering'] for r in tuned)}): "
                   f"{sum(q > 1.10 for q in best)} of {len(with_torch)} slower than 1.10x PyTorch; "
                   f"tuned / functional geometric mean over those {len(tuned)}: "
                   f"{_geomean([r['tuned'] / r['functional'] for r in tuned]):.2f}.")
    if any(r.get("cpp") and r["cpp"] >= 1e-3 for r in rows):
        out.append(f"* Functional / C++ for calls of 1 ms or more: {_spread(rows, 'functional')} "
                   f"(the compiled object, which does the same work: {_spread(rows, 'compiled')}).")
    tiny = [r for r in rows if r["case"] == "tiny" and r.get("cpp")]
    if tiny:
        added = [(r["functional"] - r["cpp"]) * 1e6 for r in tiny]
        faster = sum(r["functional"] < r["torch"] for r in tiny if r.get("torch"))
        out.append(f"* Tiny case, functional minus C++: median {float(np.median(added)):.1f} us "
                   f"(range {min(added):.1f} to {max(added):.1f}); faster than PyTorch in "
                   f"{faster} of {sum(bool(r.get('torch')) for r in tiny)}.")
    out += low_precision_goal(rows)
    warm = [r for r in rows if r.get("tune_warm") and r.get("tuned")]
    if warm:
        out.append(f"* `compile_op(tune=True)` with the decision in the tuning database, from empty "
                   f"caches: median {float(np.median([r['tune_warm'] for r in warm])) * 1e3:.2f} ms "
                   f"(one formulation compiled, nothing timed), against "
                   f"{float(np.median([r['tune_first'] for r in warm])) * 1e3:.2f} ms for this run's "
                   f"first tuning ({len(warm)} configurations with more than one way).")
    first = [r for r in rows if r.get("first_cpp")]
    if first:
        extra = [(r["first_call"] - r["first_cpp"]) * 1e3 for r in first]
        out.append(f"* First call minus the C++ program's first call (graph to compiled partition, "
                   f"one execution): median {float(np.median(extra)):.2f} ms, "
                   f"{sum(e <= 1.0 for e in extra)} of {len(extra)} within 1 ms.")
    return out


def low_precision_goal(rows: list[dict[str, Any]]) -> list[str]:
    """Each bf16/f16 configuration's time over the same configuration's f32 time
    (issue 27: median at most 1.25, none over 2, the tiny ones within 1.25)."""
    f32 = {(r["case"], r["kind"], r["format"]): r["functional"] for r in rows if r["dtype"] == "f32"}
    out = []
    for dtype in ("bf16", "f16"):
        pairs = [(r["functional"] / f32[key], r) for r in rows if r["dtype"] == dtype
                 and (key := (r["case"], r["kind"], r["format"])) in f32]
        if not pairs:
            continue
        ratios = [q for q, _ in pairs]
        over = sorted(((q, r) for q, r in pairs if q > 2), key=lambda p: -p[0])
        tiny = [q for q, r in pairs if r["case"] == "tiny"]
        out.append(f"* {dtype} time / the same configuration's f32 time: median "
                   f"{float(np.median(ratios)):.2f}, worst {max(ratios):.2f}; over 2x: {len(over)} of "
                   f"{len(pairs)}" + (" (" + ", ".join(f"{r['case']} {SHORT[r['kind']]} {r['format']} "
                                                       f"{q:.2f}x" for q, r in over) + ")" if over else "")
                   + (f"; tiny {min(tiny):.2f}-{max(tiny):.2f}" if tiny else "") + ".")
    return out


def memory_goal(memory_rows: list[dict[str, Any]]) -> str:
    """The issue's memory goal on these rows: what one call allocates (the binding's
    Python and NumPy allocations, and oneDNN's) within oneDNN's scratchpad in the C++
    program + 10% of inputs + outputs."""
    both = [m for m in memory_rows if m["cpp_onednn_kb"] is not None]
    over = [m for m in both if m["binding_kb"] + m["onednn_kb"] > m["cpp_onednn_kb"] + 0.10 * m["io_kb"]]
    same = sum(m["onednn_kb"] == m["cpp_onednn_kb"] for m in both)
    return (f"* No hidden copies: during one call the package allocated at most "
            f"{max((m['binding_kb'] for m in memory_rows), default=0)} kB itself (tracemalloc), and "
            f"oneDNN allocated as much as in the C++ program in {same} of {len(both)} (its "
            f"scratchpad: internal reorders). Binding + oneDNN within the C++ program's scratchpad "
            f"+ 10% of inputs + outputs: {len(both) - len(over)} of {len(both)}"
            + (": over in " + ", ".join(f"{m['case']} {SHORT[m['kind']]} {m['dtype']} {m['format']}"
                                        for m in over) if over else "") + ".")


def _spread(rows: list[dict[str, Any]], system: str) -> str:
    """How far `system` strays from the C++ floor on calls of 1 ms or more."""
    q = [r[system] / r["cpp"] for r in rows if r.get("cpp") and r["cpp"] >= 1e-3]
    return f"median {float(np.median(q)):.3f}, {sum(v > 1.05 for v in q)} of {len(q)} over 1.05"


def report(rows: list[dict[str, Any]], peaks: dict[str, Optional[float]], seconds: float,
           memory_rows: list[dict[str, Any]], rounds: int) -> str:
    from onednn_graph import __version__
    from onednn_graph.system import cpu_isa, onednn_version

    v = onednn_version()
    try:
        import torch
        torch_version = f"PyTorch {torch.__version__} ({torch.get_num_threads()} threads)"
    except ImportError:
        torch_version = "PyTorch not installed"
    lines = [
        "# Benchmarks", "",
        f"`python benchmarks/run.py` on {_version.cpu_model()}, "
        f"{os.cpu_count()} cores, CPU ISA {cpu_isa()}; oneDNN {v.major}.{v.minor}.{v.patch} "
        f"({v.cpu_runtime}), onednn-graph {__version__}, NumPy {np.__version__}, {torch_version}; "
        f"{len(rows)} configurations in {seconds:.0f} s.", "",
        f"Times are per call, the best of {rounds} interleaved rounds (as benchdnn reports its "
        "minimum; the medians are in the `.json` file of the same name); `functional` and `compiled` write into a "
        "caller's `out=` array. First calls are the best of "
        f"{_FIRST_REPEATS}, each from empty caches (this package's and oneDNN's). Ratios below 1 "
        "mean this package is faster.", "",
    ]
    steals = [r["steal"] for r in rows if "steal" in r]
    if steals:
        lines += [f"CPU time stolen by the VM's host while a configuration was measured: median "
                  f"{float(np.median(steals)):.1%}, worst {max(steals):.1%}; "
                  f"{sum(r.get('attempts', 1) > 1 for r in rows)} configurations were measured again "
                  f"for stealing more than {_MAX_STEAL:.0%} (up to {_RETRIES} times, the least "
                  f"stolen attempt kept).", ""]
    if any(peaks.values()):
        lines.append("Practical peak (a 2048^3 MatMul partition through the C++ API): " + ", ".join(
            f"{k} {v:.0f} GFLOP/s" for k, v in peaks.items() if v) + ".")
        lines.append("")
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        sel = [r for r in rows if r["dtype"] == dtype]
        vs_torch = [r["functional"] / r["torch"] for r in sel if r.get("torch")]
        vs_cpp = [r["functional"] / r["cpp"] for r in sel if r.get("cpp")]
        if vs_torch:
            lines.append(f"* {dtype}: functional / torch geometric mean {_geomean(vs_torch):.2f} "
                         f"(worst {max(vs_torch):.2f}); functional / C++ geometric mean "
                         f"{_geomean(vs_cpp):.3f} (worst {max(vs_cpp) if vs_cpp else float('nan'):.3f})")
    lines += [""] + goals(rows)
    lines += ["", "| case | op | dtype | format | functional ms | GFLOP/s | compiled ms | C++ ms | "
              "torch ms | func/torch | func/C++ | first call ms | C++ first call ms | lowering | "
              "tuned ms | tuned lowering |",
              "|" + "---|" * 16]
    for r in rows:
        def ms(key: str) -> str:
            return f"{r[key] * 1e3:.3f}" if r.get(key) else "—"

        def ratio(key: str) -> str:
            return f"{r['functional'] / r[key]:.2f}" if r.get(key) else "—"

        lines.append(f"| {r['case']} | {SHORT[r['kind']]} | {r['dtype']} | {r['format']} | "
                     f"{ms('functional')} | {r['gflops']:.1f} | {ms('compiled')} | {ms('cpp')} | "
                     f"{ms('torch')} | {ratio('torch')} | {ratio('cpp')} | {ms('first_call')} | "
                     f"{ms('first_cpp')} | {r['lowering']} | {ms('tuned')} | "
                     f"{r['tuned_lowering'] or '—'} |")
    if memory_rows:
        lines += ["", "## Memory of one call", "", memory_goal(memory_rows), "",
                  "One call after two warm-up calls, in a fresh interpreter and in the C++ program: "
                  "the most oneDNN held at once through the engine's allocator (its scratchpad, "
                  "with its internal reorders), the package's own Python and NumPy allocations "
                  "(tracemalloc), and peak RSS above the RSS just before the call (which also "
                  "depends on whether the allocator reuses a freed block).", "",
                  "| case | op | dtype | format | inputs + outputs kB | oneDNN kB | C++ oneDNN kB | "
                  "package's own kB | RSS extra kB | C++ RSS extra kB |", "|" + "---|" * 10]
        for m in memory_rows:
            def kb(key: str) -> str:
                return str(m[key]) if m.get(key) is not None else "—"

            lines.append(f"| {m['case']} | {SHORT[m['kind']]} | {m['dtype']} | {m['format']} | "
                         f"{m['io_kb']} | {kb('onednn_kb')} | {kb('cpp_onednn_kb')} | {kb('binding_kb')} | "
                         f"{kb('python_kb')} | {kb('cpp_kb')} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sel = [r for r in rows if r.get("torch")]
    fig, axes = plt.subplots(2, 1, figsize=(14, 8), sharey=True)
    for ax, dtype in zip(axes, ("f32", "bf16")):
        rs = [r for r in sel if r["dtype"] == dtype]
        labels = [f"{r['case']}\n{SHORT[r['kind']]} {r['format']}" for r in rs]
        ratios = [r["functional"] / r["torch"] for r in rs]
        colors = ["tab:green" if v <= 1 else "tab:red" for v in ratios]
        ax.bar(range(len(rs)), ratios, color=colors)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(rs)))
        ax.set_xticklabels(labels, rotation=90, fontsize=5)
        ax.set_ylabel(f"{dtype}: time / PyTorch's")
        ax.set_yscale("log")
    fig.suptitle("onednn-graph functional API vs PyTorch 2.13 (below 1 = faster)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def tune_ahead(args: argparse.Namespace) -> int:
    """Tune the suite's configurations into the tuning database (as
    ``onednn-graph tune`` does for JSON cases), so that later tuned calls of
    these problems compile one formulation and time nothing."""
    from onednn_graph.tuning import tuning_database

    for c in selected(args.cases):
        for kind in OPS:
            for dtype in args.dtypes.split(","):
                for fmt in FORMATS:
                    p = problem(c, kind, dtype, fmt)
                    op = compile_op(p.kind, tune=True, **dict(zip(registry.input_names(p.kind), p.arrays)),
                                    **p.kwargs)
                    print(f"{c.name} {SHORT[kind]} {dtype} {fmt}: {_how(op)}", file=sys.stderr)
    db = tuning_database()
    print(f"{len(db)} decision(s) in {db.path or 'memory only'}", file=sys.stderr)
    return 0


def default_report() -> str:
    """docs/benchmarks/<oneDNN ISA>.md for the default build (oneDNN 3.2, OpenMP), with
    the version and runtime appended for another (…/avx2-onednn-3.13-sycl.md)."""
    from onednn_graph.system import cpu_isa, onednn_version
    v = onednn_version()
    build = "" if (v.major, v.minor, v.cpu_runtime) == (3, 2, "omp") else \
        f"-onednn-{v.major}.{v.minor}-{v.cpu_runtime}"
    return f"docs/benchmarks/{cpu_isa()}{build}.md"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/run.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None,
                        help="default docs/benchmarks/<oneDNN ISA>.md: one table per CPU family")
    parser.add_argument("--plot", default=None, help="default: --out with .png")
    parser.add_argument("--tune-ahead", action="store_true",
                        help="tune every configuration into the tuning database and stop")
    parser.add_argument("--cpp-source", default="benchmarks/single_op.cpp")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--target-ms", type=float, default=10.0, help="time per batch")
    parser.add_argument("--cases", default="", help="comma-separated case names (default all but "
                        "ON_REQUEST's: conv-bwd-d-3d)")
    parser.add_argument("--dtypes", default="f32,bf16")
    args = parser.parse_args(argv)
    args.out = args.out or default_report()
    args.plot = args.plot or str(Path(args.out).with_suffix(".png"))
    if args.tune_ahead:
        return tune_ahead(args)
    # A database of this run's own: `tuned` is measured here (tune_first), then
    # served from the database (tune_warm), whatever the user's cache holds.
    os.environ["ONEDNN_GRAPH_TUNING_DB"] = tempfile.mkdtemp(prefix="onednn-graph-suite-tuning-")
    try:
        import torch
        torch.set_num_threads(os.cpu_count() or 1)
    except ImportError:
        torch = None
        print("PyTorch is not installed: no torch column (pip install torch==2.13.0)", file=sys.stderr)
    source = Path(args.cpp_source)
    binary = build_cpp(source, Path("build") / "bench") if source.exists() else None
    if binary is None:
        print("no C++ floor (needs benchmarks/single_op.cpp, g++ and onednn-devel-cpu-gomp's OpenMP oneDNN)",
              file=sys.stderr)
    cases = selected(args.cases)
    start = time.perf_counter()
    rows = []
    configs = [(c, k, d, f) for c in cases for k in OPS for d in args.dtypes.split(",") for f in FORMATS]
    for i, (c, kind, dtype, fmt) in enumerate(configs):
        p = problem(c, kind, dtype, fmt)
        attempts = []
        for _ in range(1 + _RETRIES):
            before = cpu_times()
            r = measure(p, binary, torch, args.rounds, args.target_ms * 1e-3)
            attempts.append((stolen_share(before, cpu_times()), r))
            if attempts[-1][0] <= _MAX_STEAL:
                break
        steal, r = min(attempts, key=lambda a: a[0])
        r.update(steal=steal, attempts=len(attempts))
        r.update(case=c.name, kind=kind, dtype=dtype, format=fmt, gflops=flops(p) / r["functional"] / 1e9)
        rows.append(r)
        extra = f" torch {r['functional'] / r['torch']:.2f}" if r.get("torch") else ""
        extra += f" C++ {r['functional'] / r['cpp']:.3f}" if r.get("cpp") else ""
        print(f"[{i + 1}/{len(configs)}] {c.name} {SHORT[kind]} {dtype} {fmt}: "
              f"{r['functional'] * 1e3:.3f} ms{extra} (steal {steal:.0%}, {len(attempts)} attempts)",
              file=sys.stderr)
    peaks = {d: gemm_peak(binary, d) for d in args.dtypes.split(",")}
    memory_rows = [memory(binary, c, kind, "f32", fmt) for c in cases if c.name in ("unet-2", "hifigan-1d")
                   for kind in OPS for fmt in FORMATS]
    text = report(rows, peaks, time.perf_counter() - start, memory_rows, args.rounds)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    raw = Path(args.out).with_suffix(".json")  # every figure, medians included
    raw.write_text(json.dumps({"rows": rows, "peaks": peaks, "memory": memory_rows}, indent=1) + "\n")
    if plot(rows, Path(args.plot)):
        print(f"wrote {args.plot}", file=sys.stderr)
    print(f"wrote {args.out} and {raw}", file=sys.stderr)
    return 0

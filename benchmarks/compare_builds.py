"""Two builds of the package side by side: per-call times on the suite's problems.

    python benchmarks/compare_builds.py --other /path/to/onednn-3.13-venv/bin/python
    python benchmarks/compare_builds.py --other ... --dtypes f32,bf16 --rounds 7 --out docs/x.md

This interpreter's build (the default: oneDNN 3.2, OpenMP) and the `--other`
interpreter's (e.g. one built with ONEDNN_ROOT against PyPI's oneDNN 3.13, SYCL:
scripts/test_onednn_3_13.sh makes it) each run a worker process that imports its own
onednn_graph and times the functional call of the suite's problems
(benchmarks/suite.py: cases x ops x data formats). The workers take turns, round by
round, one batch each, so both see the same machine; the table gives each build's
median per call and their ratio. Run it on a quiet machine, or with `--spinners N` beside
N processes that spin on the CPU (a busy one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import suite

_SETTLE = 0.05  # seconds between batches, as the suite waits (suite.measure)


def configs(dtypes: list[str], cases: set[str]) -> list[tuple[suite.Case, str, str, str]]:
    return [(c, k, d, f) for c in suite.CASES if not cases or c.name in cases
            for k in suite.OPS for d in dtypes for f in suite.FORMATS]


def worker(dtypes: list[str], cases: set[str], target: float) -> None:
    """Answer one line per request on stdout: "describe" -> this build; "I" -> seconds
    per call of configuration I over one batch (sized on the first request)."""
    import onednn_graph as og
    from onednn_graph._impl import version as _version
    todo = configs(dtypes, cases)
    problems: dict[int, tuple[Any, int]] = {}
    for line in sys.stdin:
        request = line.strip()
        if request == "memory":
            answer = memory()
        elif request == "describe":
            v = og.system.onednn_version()
            answer: Any = {"onednn": f"{v.major}.{v.minor}.{v.patch} ({v.cpu_runtime})",
                           "isa": og.system.cpu_isa(), "cpu": _version.cpu_model()}
        else:
            i = int(request)
            if i not in problems:
                c, kind, dtype, fmt = todo[i]
                p = suite.problem(c, kind, dtype, fmt)
                call = lambda p=p: p.function(*p.arrays, **p.kwargs, out=p.out)  # noqa: E731
                once = suite._timed(call, 3)  # compiles, warms up, sizes the batch
                problems[i] = (call, max(1, min(2000, int(target / max(once, 1e-7)))))
            call, n = problems[i]
            answer = suite._timed(call, n)
        print(json.dumps(answer), flush=True)


def memory(calls: int = 20) -> dict[str, float]:
    """Per call of a 4x256x32x32 NXC ConvTranspose (256 -> 128 channels, k3 s2), after
    3 warm-up calls: ms, minor page faults of the process and allocations that took new
    memory (``og.system.onednn_allocations()["fresh"]``, counted by SYCL builds)."""
    import resource

    import numpy as np

    import onednn_graph as og
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 32, 32, 256), dtype=np.float32)
    w = rng.standard_normal((3, 3, 128, 256), dtype=np.float32)  # XOI
    kw = dict(strides=2, pads_begin=1, pads_end=1)
    out = og.conv_transpose(x, w, **kw)
    for _ in range(3):
        og.conv_transpose(x, w, **kw, out=out)
    fresh, faults = og.system.onednn_allocations()["fresh"], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    for _ in range(calls):
        og.conv_transpose(x, w, **kw, out=out)
    seconds = time.perf_counter() - start
    return {"ms": seconds / calls * 1e3,
            "faults": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / calls,
            "fresh": (og.system.onednn_allocations()["fresh"] - fresh) / calls}


class Worker:
    def __init__(self, python: str, argv: list[str], load_aware: bool) -> None:
        # No tuning database: both builds run their default formulations. On a quiet
        # machine the two workers, taking turns, are each other's load: a build that
        # reads the other's batch as a busy machine compiles a new problem for fewer
        # threads (a 0.5x "regression" of every HiFi-GAN row, seen once), so the
        # busy-machine rule is off unless --spinners asks for a busy machine.
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent), ONEDNN_GRAPH_TUNING_DB="off")
        if not load_aware:
            env["ONEDNN_GRAPH_LOAD_AWARE"] = "0"
        self.process = subprocess.Popen([python, __file__, "--worker", *argv], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, request: Any) -> Any:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(f"{request}\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker ({self.process.args[0]}) stopped")
        return json.loads(line)

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/compare_builds.py", description=__doc__.splitlines()[0])
    parser.add_argument("--other", required=True, help="the other build's Python interpreter")
    parser.add_argument("--dtypes", default="f32")
    parser.add_argument("--cases", default="", help="comma-separated case names (default all)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target-ms", type=float, default=10.0, help="time per batch")
    parser.add_argument("--out", default=None, help="write the table here too")
    parser.add_argument("--spinners", type=int, default=0,
                        help="processes that spin on the CPU beside the whole run (a busy machine)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    dtypes, cases = args.dtypes.split(","), set(filter(None, args.cases.split(",")))
    shared = ["--dtypes", args.dtypes, "--cases", args.cases, "--target-ms", str(args.target_ms),
              "--other", args.other]
    if args.worker:
        worker(dtypes, cases, args.target_ms * 1e-3)
        return 0
    builds = [Worker(sys.executable, shared, args.spinners > 0), Worker(args.other, shared, args.spinners > 0)]
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.spinners)]
    start = time.perf_counter()
    try:
        about = [w.ask("describe") for w in builds]
        rows = []
        todo = configs(dtypes, cases)
        for i, (c, kind, dtype, fmt) in enumerate(todo):
            samples: list[list[float]] = [[], []]
            for w in builds:
                w.ask(i)  # compile and size the batch outside the timed rounds
            for r in range(args.rounds):
                for j in (0, 1) if r % 2 == 0 else (1, 0):
                    time.sleep(_SETTLE)
                    samples[j].append(builds[j].ask(i))
            a, b = (statistics.median(s) for s in samples)
            rows.append((c.name, suite.SHORT[kind], dtype, fmt, a, b))
            print(f"[{i + 1}/{len(todo)}] {c.name} {suite.SHORT[kind]} {dtype} {fmt}: "
                  f"{a * 1e3:.3f} / {b * 1e3:.3f} ms", file=sys.stderr)
        held = [w.ask("memory") for w in builds]
    finally:
        for w in builds:
            w.close()
        for p in spinning:
            p.kill()
            p.wait()
    ratios = [b / a for *_, a, b in rows]
    geomean = statistics.geometric_mean(ratios)
    lines = [
        f"`python benchmarks/compare_builds.py --other <3.13 venv>/bin/python --dtypes {args.dtypes} "
        f"--rounds {args.rounds}" + (f" --spinners {args.spinners}" if args.spinners else "") +
        f"` on {about[0]['cpu']}, {os.cpu_count()} cores, CPU ISA "
        f"{about[0]['isa']}; {time.perf_counter() - start:.0f} s"
        + (f", beside {args.spinners} processes that spin on the CPU" if args.spinners else ", quiet")
        + ". Median ms per functional call "
        f"(`out=` given) over {args.rounds} alternating batches of about {args.target_ms:g} ms.",
        "",
        f"| case | op | dtype | format | oneDNN {about[0]['onednn']} ms | "
        f"oneDNN {about[1]['onednn']} ms | ratio |",
        "|---|---|---|---|---|---|---|",
        *[f"| {n} | {k} | {d} | {f} | {a * 1e3:.3f} | {b * 1e3:.3f} | {b / a:.2f} |"
          for n, k, d, f, a, b in rows],
        "",
        f"Geometric mean of the ratios: {geomean:.2f} ({sum(r < 0.9 for r in ratios)} of {len(ratios)} "
        f"under 0.90, {sum(r > 1.1 for r in ratios)} over 1.10).",
        "",
        "A repeated 4x256x32x32 NXC ConvTranspose (256 -> 128 channels, k3 s2), 20 calls after "
        "3: " + "; ".join(f"oneDNN {a['onednn']}: {m['ms']:.1f} ms, {m['faults']:.1f} page faults "
                         f"and {m['fresh']:.1f} fresh allocations per call" for a, m in zip(about, held)) + ".",
    ]
    return suite.publish("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    sys.exit(main())

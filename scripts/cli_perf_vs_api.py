"""docs/cli.md's perf figures: `onednn-graph run --mode perf` beside the functional API.

For examples/graphs/deconv_{tiny,medium,large}.json in f32 and bf16, the median the
command reports (run as a user runs it) and the median of ``og.conv_transpose`` called
on arrays of the same problem (shapes, strides, dtype, attributes: the graph's), with
the threads the command says it ran on. Each measurement is a process of its own and
rounds alternate the two, so that other load weighs on both alike. Each figure is the
best round's median (the benchmark suite's convention: on the Zen 4 VM the tiny call
takes about 7 microseconds, or about 11 for seconds at a time, whatever runs it), and the
ratio of the rounds' medians is printed beside it; the load average before and after.

Run from anywhere: ``python scripts/cli_perf_vs_api.py [--rounds 7]`` (about a minute
on the 2-core Zen 4).
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

import numpy as np

import onednn_graph as og
from onednn_graph._impl import arrays as _arrays, version as _version

GRAPHS = Path(__file__).resolve().parents[1] / "examples" / "graphs"
#: case -> executions per round (about a third of a second each on the Zen 4)
CASES = {"tiny": 2000, "medium": 300, "large": 10}


def command_median(path: Path, dtype: str, repeat: int) -> tuple[float, str]:
    """The command's median (ms) for `path` in `dtype`, and the threads it reports
    ("default": oneDNN's, all)."""
    argv = [sys.executable, "-m", "onednn_graph", "run", "--mode", "perf", "--json",
            "--repeat", str(repeat), "--dt", dtype, str(path)]
    [case] = json.loads(subprocess.run(argv, check=True, capture_output=True,
                                       text=True).stdout)["cases"]
    return case["median_ms"], ",".join(str(n or "default") for n in case["threads"].values())


def api_median(path: Path, dtype: str, repeat: int) -> float:
    """The median (ms) of ``og.conv_transpose`` on the problem of `path` in `dtype`,
    after as many untimed calls (the first compiles)."""
    [op] = og.load_graph(path).ops
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1, 1, t.shape).astype(_arrays.numpy_dtype(dtype)) for t in op.inputs]
    attrs = op.attrs

    def call() -> None:
        og.conv_transpose(*arrays, **attrs)
    for _ in range(repeat):
        call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def api_median_in_a_process(path: Path, dtype: str, repeat: int) -> float:
    """``api_median`` in a process of its own (this script, with --api)."""
    argv = [sys.executable, __file__, "--api", str(path), dtype, str(repeat)]
    return float(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--api", nargs=3, metavar=("GRAPH", "DTYPE", "REPEAT"),
                        help="print api_median of one graph and dtype (the rounds' helper)")
    args = parser.parse_args()
    if args.api:
        print(api_median(Path(args.api[0]), args.api[1], int(args.api[2])))
        return 0
    rounds = args.rounds
    default, _ = _version.onednn_threads()
    print(f"{_version.cpu_model()}, oneDNN ISA {og.system.cpu_isa()}, {default} threads by "
          f"default, load average {os.getloadavg()[0]:.2f}")
    print("| case | dtype | threads | `onednn-graph run --mode perf` ms | `og.conv_transpose` ms "
          "| ratio | medians' ratio |\n| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for name, repeat in CASES.items():
        path = GRAPHS / f"deconv_{name}.json"
        for dtype in ("f32", "bf16"):
            command: list[float] = []
            api: list[float] = []
            threads = ""
            for _ in range(rounds):
                median, threads = command_median(path, dtype, repeat)
                command.append(median)
                api.append(api_median_in_a_process(path, dtype, repeat))
            c, a = min(command), min(api)
            medians = statistics.median(command) / statistics.median(api)
            print(f"| {name} | {dtype} | {threads} | {c:.4g} | {a:.4g} | {c / a:.2f} "
                  f"| {medians:.2f} |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

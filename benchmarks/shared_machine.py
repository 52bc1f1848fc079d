"""The package on a shared machine: one op in a loop, alone and beside other processes.

    python benchmarks/shared_machine.py [--python PY ...] [--seconds 4] [--rounds 3]
                                        [--env NAME=VALUE ...] [--out FILE.json]

One problem, the depthwise ConvTranspose of the shared-machine issue ((8, 64, 32, 32)
f32 NCX, kernel 4, stride 2, pads 1, 64 groups), is called in a loop for `--seconds` by
one process of the package ("alone"), by two and by three at once, beside a PyTorch
process running the same layer (if torch is installed), and beside as many processes
that spin on the CPU as it has cores. Every package process runs with
OMP_NUM_THREADS set to the core count, as the issue's users set it (`--threads-unset`
leaves it unset too). Each `--python` (a build of the package: e.g. the oneDNN 3.13
environment of scripts/test_onednn_3_13.sh) runs every scenario, the builds taking
turns scenario by scenario, `--rounds` times; the report gives each scenario's median
ms per call in the package's processes (the median over the processes and rounds of
each process's median) and its ratio to alone, the mean ms per call (a process's
seconds over its calls: slow calls weigh as they cost), and the throughput of all the
package's processes together in calls per second.

Each process also reports the share of its calls the package ran on fewer threads than
all (its busy-machine default: ``limited`` in the JSON).

`--env NAME=VALUE` adds a variable to the package's processes (e.g.
ONEDNN_GRAPH_LOAD_AWARE=0, ONEDNN_GRAPH_BATCH_PARTS=0, OMP_WAIT_POLICY=passive,
GOMP_SPINCOUNT=10000; '' for none);
each variant is one more column per build. `--only alone 2` runs only the scenarios
whose names start with those words.

A report of the machine, not a test: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Optional

SHAPE = dict(x=(8, 64, 32, 32), w=(64, 1, 4, 4), strides=2, pads=1, groups=64)

_WORKER = r"""
import json, sys, time
import numpy as np
start_at, seconds, kind = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
shape = json.loads(sys.argv[4])
rng = np.random.default_rng(0)
x = rng.standard_normal(shape["x"], dtype=np.float32)
w = rng.standard_normal(shape["w"], dtype=np.float32)
if kind == "torch":
    import torch
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    def call():
        with torch.no_grad():
            torch.nn.functional.conv_transpose2d(tx, tw, stride=shape["strides"],
                                                 padding=shape["pads"], groups=shape["groups"])
    info = {"runtime": f"torch {torch.__version__}, {torch.get_num_threads()} threads"}
else:
    import onednn_graph as og
    attrs = dict(strides=shape["strides"], pads_begin=shape["pads"], pads_end=shape["pads"],
                 groups=shape["groups"], data_format="NCX", weights_format="IOX")
    out = np.empty(og.output_shape("ConvTranspose", [x.shape, w.shape], **attrs), np.float32)
    from onednn_graph._impl import machine_load
    def call():
        og.conv_transpose(x, w, **attrs, out=out)
        return machine_load.LIMIT.threads
    v = og.system.onednn_version()
    info = {"runtime": f"oneDNN {v.major}.{v.minor}.{v.patch} ({v.cpu_runtime})"}
for _ in range(20):
    call()
while time.time() < start_at:
    time.sleep(0.001)
times, limited = [], 0
end = start_at + seconds
while time.time() < end:
    t = time.perf_counter()
    limited += bool(call())  # the package's calls on fewer threads than all (a busy machine)
    times.append(time.perf_counter() - t)
info.update(calls=len(times), median_ms=1e3 * sorted(times)[len(times) // 2],
            limited=limited / max(len(times), 1))
print(json.dumps(info))
"""


def _scenarios(cores: int, with_torch: bool) -> list[tuple[str, int, str]]:
    """(name, package processes, companion) of each scenario."""
    out = [("alone", 1, ""), ("2 processes", 2, ""), ("3 processes", 3, "")]
    if with_torch:
        out.append(("beside PyTorch", 1, "torch"))
    out.append((f"beside {cores} spinners", 1, "spin"))
    return out


def _run(python: str, env: dict[str, str], processes: int, companion: str, cores: int,
         seconds: float, torch_python: Optional[str]) -> list[dict[str, Any]]:
    """Each package process's report for one scenario."""
    start_at = time.time() + 3.0  # every process imported and warmed up by then
    shape = json.dumps(SHAPE)
    procs = [subprocess.Popen([python, "-c", _WORKER, str(start_at), str(seconds), "og", shape],
                              env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(processes)]
    others = []
    if companion == "torch" and torch_python:
        others.append(subprocess.Popen([torch_python, "-c", _WORKER, str(start_at),
                                        str(seconds + 1), "torch", shape],
                                       stdout=subprocess.DEVNULL))
    elif companion == "spin":
        others += [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                   for _ in range(cores)]
    try:
        reports = []
        for p in procs:
            text, _ = p.communicate(timeout=seconds + 120)
            if p.returncode:
                raise RuntimeError(f"{python} exited with {p.returncode}")
            reports.append(json.loads(text))
        return reports
    finally:
        for p in others:
            p.kill()
            p.wait()


def _has_torch(python: str) -> bool:
    return subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", nargs="+", default=[sys.executable],
                        help="interpreters of the builds to compare (default: this one)")
    parser.add_argument("--env", nargs="*", default=[],
                        help="NAME=VALUE variants for the package's processes, each a column "
                             "('' is the default environment)")
    parser.add_argument("--threads-unset", action="store_true",
                        help="leave OMP_NUM_THREADS unset (default: the core count)")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=[],
                        help="run only the scenarios whose names start with these words "
                             "(e.g. alone 2)")
    parser.add_argument("--out", help="write every figure to this JSON file")
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0))
    torch_python = next((p for p in args.python + [sys.executable] if _has_torch(p)), None)
    variants = args.env or [""]
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if not args.threads_unset:
        base["OMP_NUM_THREADS"] = str(cores)
    columns = [(py, var) for py in args.python for var in variants]
    results: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    runtimes: dict[str, str] = {}
    scenarios = [s for s in _scenarios(cores, torch_python is not None)
                 if not args.only or any(s[0].startswith(w) for w in args.only)]
    for _ in range(args.rounds):
        for name, processes, companion in scenarios:
            for py, var in columns:
                env = dict(base)
                if var:
                    key, _, value = var.partition("=")
                    env[key] = value
                reports = _run(py, env, processes, companion, cores, args.seconds, torch_python)
                runtimes[py] = reports[0]["runtime"]
                results.setdefault((name, py, var), []).extend(reports)
    from onednn_graph._impl import version as _version
    print(f"{_version.cpu_model()}, {cores} CPUs; OMP_NUM_THREADS="
          f"{base.get('OMP_NUM_THREADS', 'unset')}; {args.rounds} rounds of {args.seconds} s")
    heads = [f"{runtimes[py]}{' ' + var if var else ''}" for py, var in columns]
    print("| scenario | " + " | ".join(f"{h}: median ms/call (x alone), mean ms/call, calls/s"
                                      for h in heads) + " |")
    print("|---" * (len(columns) + 1) + "|")
    table = []
    for name, processes, _ in scenarios:
        cells = []
        for py, var in columns:
            reports = results[(name, py, var)]
            ms = statistics.median(r["median_ms"] for r in reports)
            alone = statistics.median(r["median_ms"] for r in results[("alone", py, var)])
            rate = sum(r["calls"] for r in reports) / args.rounds / args.seconds
            # a process's mean: its window over its calls (slow calls weigh as they cost)
            mean = statistics.median(1e3 * args.seconds / max(r["calls"], 1) for r in reports)
            cells.append(f"{ms:.2f} ({ms / alone:.2f}x), {mean:.2f}, {rate:.0f}")
            table.append(dict(scenario=name, build=runtimes[py], env=var, median_ms=ms,
                              vs_alone=ms / alone, mean_ms=mean, calls_per_s=rate,
                              medians_ms=[r["median_ms"] for r in reports],
                              limited=[r.get("limited", 0.0) for r in reports]))
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(cpu=_version.cpu_model(), cores=cores, rows=table), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

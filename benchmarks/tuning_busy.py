"""What tune=True decides while other processes load the CPU (a report, not a test).

    python benchmarks/tuning_busy.py [--spinners 2] [--repeat 3]

The suite holds tuning's rules on given timings and load readings
(tests/api/test_tuning_verdict.py); this runs them on the machine. One problem with two
formulations (depthwise NXC ConvTransposeBackwardData, 4x33x33x32, kernel 3, stride 2;
as itself or as the forward Convolution) is tuned `--repeat` times on the quiet machine
and as often beside `--spinners` processes that spin on the CPU, each from an empty
tuning database of its own; the report gives each verdict, the load share tuning read,
and whether the decision was stored. A busy machine must store nothing, or the quiet
machine's decision.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import onednn_graph as og
from onednn_graph._impl import version as _version

PROBLEM = dict(diff_dst=(4, 33, 33, 32), weights=(3, 3, 1, 32), strides=2, pads_begin=1,
               pads_end=1, groups=32, data_format="NXC", weights_format="XOI", dtype="f32")


def _tune() -> tuple[str, str, int]:
    """(verdict, the kind kept, decisions stored) from an empty database."""
    og.cache.clear_cache()
    og.tuning.tuning_database().clear()
    op = og.compile_op("ConvTransposeBackwardData", tune=True, threads=0, **PROBLEM)
    return op.tuning_verdict, op._prepared.op.kind, len(og.tuning.tuning_database().entries())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spinners", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ["ONEDNN_GRAPH_TUNING_DB"] = tempfile.mkdtemp(prefix="tuning-busy-")
    print(f"{_version.cpu_model()} ({og.system.cpu_isa()}), {os.cpu_count()} CPUs")
    for label, spinners in (("quiet", 0), (f"beside {args.spinners} spinning processes",
                                           args.spinners)):
        spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(spinners)]
        try:
            for _ in range(args.repeat):
                verdict, kind, stored = _tune()
                print(f"{label}: kept {kind}, {stored} stored: {verdict}")
        finally:
            for p in spin:
                p.kill()
                p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

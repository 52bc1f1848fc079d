"""Instructions per call that the binding adds to oneDNN, counted by valgrind.

    python benchmarks/call_overhead.py [--kind ConvTranspose] [--dtype f32] [--format NXC]

On a shared VM, timing a 10 us call moves by 1-2 us from one run to the next,
as much as the binding costs. Instruction counts do not: this script runs the
tiny case's problem under callgrind for n and 2n calls, in each of three
programs (the functional API, a compile_op operation, and benchmarks/single_op.cpp
driving the same compiled partition), and prints the difference divided by n.
Under valgrind oneDNN finds no AVX-512 and runs its AVX2 kernels, the same in
all three; only the binding's share is of interest. Needs valgrind and the
C++ program (`python benchmarks/run.py` builds it, or see suite.build_cpp).
About 3 minutes.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import suite

N = 2000
# The package's own calls, in a child process run under valgrind.
_CHILD = """
import sys
sys.path.insert(0, sys.argv[6])  # this directory: the suite
import suite
from onednn_graph.operation import compile_op
from onednn_graph._impl import registry
case = next(c for c in suite.CASES if c.name == "tiny")
p = suite.problem(case, sys.argv[1], sys.argv[2], sys.argv[3])
call = lambda: p.function(*p.arrays, **p.kwargs, out=p.out)
if sys.argv[4] == "compiled":
    op = compile_op(p.kind, **dict(zip(registry.input_names(p.kind), p.arrays)), **p.kwargs)
    call = lambda: op(*p.arrays, out=p.out)
call()
for _ in range(int(sys.argv[5])):
    call()
"""


def instructions(command: list[str], stdin: str = "") -> int:
    """Instructions the program ran, all threads (callgrind's total)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg",
                              "--smc-check=all-non-file", *command],
                             input=stdin, capture_output=True, text=True, check=True)
    return int(re.search(r"I\s+refs:\s+([\d,]+)", out.stderr).group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="ConvTranspose")
    parser.add_argument("--dtype", default="f32")
    parser.add_argument("--format", default="NXC")
    parser.add_argument("--binary", default="build/bench/single_op")
    args = parser.parse_args()
    # Spinning OpenBLAS threads (NumPy's) would add instructions in proportion to run
    # time; the children inherit this.
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    case = next(c for c in suite.CASES if c.name == "tiny")
    p = suite.problem(case, args.kind, args.dtype, args.format)
    per_call = {}
    for system in ("functional", "compiled"):
        counts = [instructions([sys.executable, "-c", _CHILD, args.kind, args.dtype, args.format, system,
                                str(n), str(Path(__file__).parent)]) for n in (N, 2 * N)]
        per_call[system] = (counts[1] - counts[0]) / N
    binary = Path(args.binary)
    if binary.exists():
        spec = suite.floor_input(p)
        counts = [instructions([str(binary)], f"{spec}run 2\nrun {n}\nquit\n") for n in (N, 2 * N)]
        per_call["cpp"] = (counts[1] - counts[0]) / N
    print(f"tiny {args.kind} {args.dtype} {args.format}: instructions per call "
          + ", ".join(f"{k} {v:,.0f}" for k, v in per_call.items()))
    if "cpp" in per_call:
        print("added to the C++ program: " + ", ".join(
            f"{k} {per_call[k] - per_call['cpp']:,.0f}" for k in ("functional", "compiled")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run the benchmark suite and write docs/benchmarks/<oneDNN ISA>.md, .json and .png.

    pip install ".[bench]"          # PyTorch 2.13 (local wheel), matplotlib, oneDNN headers
    python benchmarks/run.py        # from the repository root, on a quiet machine

Options: --cases tiny,dcgan-1  --dtypes f32  --rounds 7  --target-ms 20 (see --help).
The logic lives in benchmarks/suite.py.
"""

import sys

from suite import main

if __name__ == "__main__":
    sys.exit(main())

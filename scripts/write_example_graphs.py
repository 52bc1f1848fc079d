"""Write examples/graphs/: small graphs in oneDNN's JSON format for ``onednn-graph run``.

Each file is a functional-API call described by the package's own writer
(``onednn_graph.reproducer``: the call is planned, not run), so the graphs are the
project's and need nothing from oneDNN's source tree. They cover the four ops in f32
and bf16, a ConvTranspose with its bias and a ReLU fused after it, and one
ConvTranspose problem in three sizes for ``--mode perf`` (docs/cli.md quotes their
figures); ``examples.batch`` runs the first five in both dtypes.

Run from anywhere: ``python scripts/write_example_graphs.py`` (re)writes the folder;
``--check`` writes nothing and exits 1 when a file differs from what it would write.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np

import onednn_graph as og
from onednn_graph.reproducer import reproducer

FOLDER = Path(__file__).resolve().parents[1] / "examples" / "graphs"
BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)


def zeros(dtype: np.dtype, *shape: int) -> np.ndarray:
    return np.zeros(shape, dtype)  # only shapes and dtypes reach the file


#: file name -> (what it holds, the functional-API call it describes)
GRAPHS: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "deconv_f32.json": (
        "ConvTranspose f32, NCX/IOX: 16 -> 8 channels, 8x8 -> 16x16 (kernel 3, stride 2, "
        "pads 1/1, output_padding 1)",
        lambda: reproducer(og.conv_transpose, zeros(F32, 1, 16, 8, 8), zeros(F32, 16, 8, 3, 3),
                           strides=2, pads_begin=1, pads_end=1, output_padding=1,
                           data_format="NCX", weights_format="IOX").spec),
    "deconv_bwd_d_bf16.json": (
        "ConvTransposeBackwardData bf16, NXC/XOI: diff_dst 2x16x16x8 -> diff_src 2x8x8x16 "
        "(kernel 3, stride 2, pads 1/0)",
        lambda: reproducer(og.conv_transpose_backward_data, zeros(BF16, 2, 16, 16, 8),
                           zeros(BF16, 3, 3, 8, 16), strides=2, pads_begin=1, pads_end=0).spec),
    "deconv_bwd_w_f32.json": (
        "ConvTransposeBackwardWeights f32, NCX/IOX: weights 16x8x3x3 from src 2x16x8x8 and "
        "diff_dst 2x8x16x16 (stride 2, pads 1/1, output_padding 1)",
        lambda: reproducer(og.conv_transpose_backward_weights, zeros(F32, 2, 16, 8, 8),
                           zeros(F32, 2, 8, 16, 16), (16, 8, 3, 3), strides=2, pads_begin=1,
                           pads_end=1, output_padding=1, data_format="NCX",
                           weights_format="IOX").spec),
    "conv_bwd_d_bf16.json": (
        "ConvolutionBackwardData bf16, NXC/XIO: diff_dst 2x8x8x16 -> diff_src 2x16x16x8 "
        "(kernel 3, stride 2, pads 1/0)",
        lambda: reproducer(og.convolution_backward_data, zeros(BF16, 2, 8, 8, 16),
                           zeros(BF16, 3, 3, 8, 16), (2, 16, 16, 8), strides=2, pads_begin=1,
                           pads_end=0).spec),
    "deconv_bias_relu_f32.json": (
        "ConvTranspose f32 with its bias, then a ReLU: one fused partition, NXC/XOI, "
        "8 -> 16 channels, 8x8 -> 16x16 (kernel 4, stride 2, pads 1/1)",
        lambda: reproducer(og.conv_transpose, zeros(F32, 1, 8, 8, 8), zeros(F32, 4, 4, 16, 8),
                           zeros(F32, 16), strides=2, pads_begin=1, pads_end=1,
                           post_ops=[og.post.relu()]).spec),
    # One ConvTranspose problem at three sizes (NCX/IOX), for --mode perf: the benchmark
    # suite's "tiny" case (8 KFLOP: the functional API runs it on one thread), a
    # decoder layer (67 MFLOP) and a U-Net up-sampling (1.07 GFLOP, the suite's unet-1).
    "deconv_tiny.json": (
        "ConvTranspose f32, NCX/IOX: 1x8x4x4 -> 8 channels (kernel 2, stride 2): 8 KFLOP",
        lambda: reproducer(og.conv_transpose, zeros(F32, 1, 8, 4, 4), zeros(F32, 8, 8, 2, 2),
                           strides=2, data_format="NCX", weights_format="IOX").spec),
    "deconv_medium.json": (
        "ConvTranspose f32, NCX/IOX: 4x64x16x16 -> 32 channels (kernel 4, stride 2, pads 1/1): "
        "67 MFLOP",
        lambda: reproducer(og.conv_transpose, zeros(F32, 4, 64, 16, 16), zeros(F32, 64, 32, 4, 4),
                           strides=2, pads_begin=1, pads_end=1, data_format="NCX",
                           weights_format="IOX").spec),
    "deconv_large.json": (
        "ConvTranspose f32, NCX/IOX: 4x256x32x32 -> 128 channels (kernel 2, stride 2): "
        "1.07 GFLOP",
        lambda: reproducer(og.conv_transpose, zeros(F32, 4, 256, 32, 32),
                           zeros(F32, 256, 128, 2, 2), strides=2, data_format="NCX",
                           weights_format="IOX").spec),
}

#: The graphs examples.batch runs, each in f32 and bf16.
BATCHED = ["deconv_f32.json", "deconv_bwd_d_bf16.json", "deconv_bwd_w_f32.json",
           "conv_bwd_d_bf16.json", "deconv_bias_relu_f32.json"]


def contents() -> dict[str, str]:
    """Each file of the folder and its text."""
    files = {name: json.dumps(make(), indent=2) + "\n" for name, (_, make) in GRAPHS.items()}
    files["examples.batch"] = (
        "# The example graphs (scripts/write_example_graphs.py), each in f32 and in bf16:\n"
        "# onednn-graph run --batch examples/graphs/examples.batch\n"
        "--reset --dt=f32,bf16\n" + "".join(f"--case={name}\n" for name in BATCHED))
    files["README.md"] = (
        "# Example graphs\n\n"
        "Graphs in oneDNN's JSON format for `onednn-graph run` ([docs/cli.md](../../docs/cli.md)), "
        "written by `python scripts/write_example_graphs.py` with the package's own writer "
        "(`onednn_graph.reproducer`); nothing here comes from oneDNN's source tree.\n\n"
        "| file | what |\n| --- | --- |\n"
        + "".join(f"| `{name}` | {what} |\n" for name, (what, _) in GRAPHS.items())
        + "| `examples.batch` | a benchdnn batch file running the first five in f32 and bf16 |\n")
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a file differs from what would be written")
    check = parser.parse_args().check
    stale = []
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name, text in contents().items():
        path = FOLDER / name
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"{FOLDER}: out of date: {', '.join(stale)} (run {sys.argv[0]})", file=sys.stderr)
        return 1
    print(f"{FOLDER}: {len(contents())} files " + ("up to date" if check else "written"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

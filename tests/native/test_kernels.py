"""The kernel probe (_kernels): what the linked oneDNN runs for an op in a dtype on this
CPU, asked of the library itself.

Truths: oneDNN's Graph API on the same problem (the probe finds no kernel exactly
where a compile fails), oneDNN 3.2's documented floors (bf16 needs AVX-512, f16
AVX512-FP16; ONEDNN_MAX_CPU_ISA lowers what it dispatches to), and the reference,
which every op must match under each lower instruction set this CPU can emulate.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph._impl import compiled as _compiled, kernels as _kernels
from helpers import run_python

# A problem of each kind, as handed to oneDNN: NXC data, 2x16x8x8 -> 16 channels,
# kernel 3, stride 2, pads 1/1 (the transposed ops: 8 -> 15 positions).
ATTRS = dict(strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
             auto_pad="None", groups=1, data_format="NXC")
X, Y, W = (2, 8, 8, 16), (2, 15, 15, 16), (3, 3, 16, 16)
PROBLEMS = {  # kind: (weights_format, input shapes, output shape)
    "ConvTranspose": ("XOI", [X, W], Y),
    "ConvTransposeBackwardData": ("XOI", [Y, W], X),
    "ConvTransposeBackwardWeights": ("XOI", [X, Y], W),
    "Convolution": ("XIO", [Y, W], X),
    "ConvolutionBackwardData": ("XIO", [X, W], Y),
    "ConvolutionBackwardWeights": ("XIO", [Y, X], W),
}
# oneDNN 3.2 has no bf16 or f16 kernel at all below these (its platform checks:
# bf16 from avx512_core, f16 from avx512_core_fp16; avx2_vnni_2 is not among ours).
NO_LOW_PRECISION = ("sse41", "avx", "avx2", "avx2_vnni")


def _probe(kind, dtype):
    fmt, inputs, output = PROBLEMS[kind]
    return _kernels.for_op(kind, dict(ATTRS, weights_format=fmt), dtype, inputs, output)


@pytest.mark.parametrize("name, status", [
    ("brgconv:avx512_core_amx", "native"), ("jit:avx2", "native"), ("x64:gemm:jit", "native"),
    ("brg_conv:avx2+brgconv_strided:avx2", "native"), ("conv:any+jit:avx2", "native"),
    ("ref:any", "reference"), ("conv:any+ref:any", "reference"), ("gemm:ref", "reference"),
])
def test_reference_kernels_are_told_by_name(name, status):
    assert _kernels.classify(name) == status


@pytest.mark.parametrize("kind", PROBLEMS)
def test_f32_has_an_optimized_kernel_on_every_cpu(kind):
    k = _probe(kind, "f32")
    assert k.status == "native", k


@pytest.mark.parametrize("kind", PROBLEMS)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_the_probe_finds_no_kernel_exactly_where_the_graph_api_cannot_compile(kind, dtype):
    fmt, inputs, output = PROBLEMS[kind]
    attrs = dict(ATTRS, weights_format=fmt)
    if kind.startswith("Convolution") and kind != "Convolution":
        attrs["dst_shape" if kind.endswith("Data") else "weights_shape"] = list(output)
    if kind == "ConvTransposeBackwardWeights":
        attrs["weights_shape"] = list(output)
    dense = [_compiled.meta(np.empty(s, np.int8)) for s in inputs + [output]]
    try:
        _compiled.CompiledOp(kind, attrs, dtype, dense[:-1], dense[-1])
        compiles = True
    except og.UnsupportedError:
        compiles = False
    probe = _kernels.for_op(kind, attrs, dtype, inputs, output)
    assert compiles == (probe.status != "none"), probe


@pytest.mark.skipif(og.system.cpu_isa() not in NO_LOW_PRECISION,
                    reason="this CPU has AVX-512; the lower instruction sets run in a child below")
@pytest.mark.parametrize("kind", PROBLEMS)
def test_no_bf16_or_f16_kernel_below_avx512(kind):
    for dtype in ("bf16", "f16"):
        assert _probe(kind, dtype).status == "none"


def test_a_problem_is_probed_once():
    _kernels._probe.cache_clear()
    for _ in range(3):
        _probe("ConvTranspose", "bf16")
    info = _kernels._probe.cache_info()
    assert (info.misses, info.hits) == (1, 2)


# What every op in every dtype must do under each instruction set oneDNN can be
# lowered to: compute the reference's numbers (the bound of the dtype), whichever
# form the probe picks there. A fresh interpreter, since oneDNN reads the cap once.
_SWEEP = """
import onednn_graph as og
from onednn_graph._tools import support as _support
print(og.system.cpu_isa())
for kind in og.shapes.KINDS:
    for dtype in ("f32", "bf16", "f16"):
        for change in ({}, dict(groups="depthwise"), dict(dilations=2, rank=3),
                       dict(output_padding=3, strides=2, pads_begin=0)):
            if kind == "ConvolutionBackwardData" and "output_padding" in change:
                continue
            p = _support.problem(_support.Case(kind, dtype, **change))
            outcome = _support.package(p)
            assert outcome.status in ("native", "lowered"), (kind, dtype, change, outcome)
print("ok")
"""


@pytest.mark.parametrize("isa", ["SSE41", "AVX2"])
def test_every_op_and_dtype_matches_the_reference_on_a_lower_isa(monkeypatch, isa):
    if isa == "AVX2" and og.system.cpu_isa() == "sse41":
        pytest.skip("the cap only lowers: this CPU has no AVX2")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", isa)
    lines = run_python(_SWEEP, timeout=300).split()
    assert lines == [isa.lower(), "ok"]

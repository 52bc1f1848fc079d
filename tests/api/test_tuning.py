"""compile_op(..., tune=True), the alternative lowerings it chooses from, and the
one the package runs by default where oneDNN 3.2 runs it faster (_lowering.preferred).

Truth: the NumPy reference, with the package's derived bound
(onednn_graph.tolerance): every alternative must compute the op, in every
geometry the native form handles (strides, pads, dilations, output_padding up
to the cropped case), so that whichever one measures fastest, the result is
right. Which one wins is the machine's business; the tests only check that the
kept one is the fastest of the times recorded, or the default where no candidate
won clearly (test_tuning_verdict.py holds the decision rule).
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph.errors import UnsupportedError
from onednn_graph import shapes
from onednn_graph._impl import (as_f32 as _as_f32, call as _call, compiled as _compiled,
                                plan as _plan, lowering as _lowering)
from onednn_graph._impl import version as _version
from onednn_graph._tools import support as _support
from onednn_graph._impl.arrays import crop
from onednn_graph._impl.arrays import dtype_name
from onednn_graph._impl import registry
from helpers import random

KINDS = ["ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
         "ConvolutionBackwardData"]

GEOMETRIES = [  # (strides, pads_begin, pads_end, dilations, output_padding)
    (1, 0, 0, 1, 0),
    (2, 1, 1, 1, 0),
    (2, 0, 1, 2, 1),
    (3, 1, 0, 1, 2),
    (2, 0, 0, 1, 1),
    (2, 1, 0, 1, 1),  # folded pads_end -1
    (2, 0, 0, 1, 3),  # output_padding >= strides + pads_end: the cropped case
]


def _problem(kind, geometry, data_format, dtype, groups=1):
    s, pb, pe, d, op = geometry
    return _support.problem(_support.Case(kind, dtype, data_format=data_format, strides=s,
                                          pads_begin=pb, pads_end=pe, dilations=d,
                                          output_padding=op, groups=groups))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_every_alternative_computes_the_op(kind, geometry, data_format, dtype):
    p = _problem(kind, geometry, data_format, dtype)
    input_shapes = [a.shape for a in p.args]
    plan = shapes.plan(kind, input_shapes, **p.kwargs)
    chosen = _lowering.lower(plan, input_shapes)
    alternatives = _lowering.alternatives(plan, input_shapes, chosen)
    if kind == "ConvTransposeBackwardData" and chosen.kind == "Convolution":
        assert alternatives == []  # dilations > 1: the Convolution is the only form 3.2 compiles
        return
    if kind == "ConvTranspose" and chosen.crop:
        assert alternatives == []  # the cropped output's tail is the bias: ConvTranspose only
        return
    # The rewrite into another op first; then, where the geometry has them, the
    # formulations on views of the arrays (_impl.matmul_form, _impl.packed_form).
    assert alternatives and alternatives[0].kind != chosen.kind
    assert all(_lowering.formed(alt) for alt in alternatives[1:])
    for alt in alternatives:
        arrays = list(p.args)
        out = np.empty(p.output_shape, arrays[0].dtype)
        if alt.crop:  # the backward ops leave out diff_dst's unread tail (never ConvTranspose here)
            index = _lowering.geometry_tensor(kind)
            arrays[index] = crop(arrays[index], data_format, alt.crop)
        # Compiled as the package compiles it on this CPU: natively, or in f32 between
        # TypeCasts where this CPU's oneDNN has no kernel for the dtype (_as_f32).
        try:
            op = _call._compile(alt, dtype_name(arrays[0].dtype), arrays, out, None, 0)
        except UnsupportedError:
            assert _lowering.formed(alt) in _lowering.F32_ONLY_FORMS and dtype != "f32"
            continue
        op.execute(arrays, out)
        result = _support._check(p, out)
        assert result.ok, (alt.lowering, str(result))


@pytest.mark.parametrize("kind", KINDS)
def test_tune_keeps_the_fastest_and_computes_the_op(kind):
    p = _problem(kind, GEOMETRIES[1], "NXC", "f32")
    inputs = dict(zip(registry.input_names(kind), p.args))
    op = og.compile_op(kind, tune=True, **inputs, **p.kwargs)
    # the default and each alternative, each on both thread counts: the problem is small
    # (_plan.SMALL_FLOPS)
    input_shapes = [a.shape for a in p.args]
    plan = shapes.plan(kind, input_shapes, **p.kwargs)
    lowerings = 1 + len(_lowering.alternatives(plan, input_shapes, _lowering.lower(plan, input_shapes)))
    assert lowerings >= 2 and op.tuning is not None
    assert len(op.tuning) == lowerings * (2 if og._core.can_limit_threads() else 1)
    # the fastest where it won clearly, else the default (_tuning.verdict). Labels name
    # the lowering and the thread count; a lowering alone does not (the default's may
    # run on 1 thread while the fastest label, not clearly faster, is all threads).
    best = min(op.tuning, key=op.tuning.get)
    if "default stands" in op.tuning_verdict:
        default = og.compile_op(kind, **inputs, **p.kwargs)
        assert (op.lowering, op.threads) == (default.lowering, default.threads)
    else:
        assert best.startswith(op.lowering)
        assert best.endswith("on 1 thread") == (op.threads == 1)
    result = _support._check(p, op(*p.args))
    assert result.ok, str(result)
    assert og.compile_op(kind, **inputs, **p.kwargs).tuning is None


def test_tune_with_shapes_and_constant_weights():
    p = _problem("ConvTransposeBackwardData", GEOMETRIES[3], "NCX", "bf16")
    dy, w = p.args
    op = og.compile_op("ConvTransposeBackwardData", diff_dst=dy.shape, weights=w, dtype="bf16",
                       constant_weights=True, tune=True, **p.kwargs)
    assert op.tuning is not None and op.lowering in op.tuning
    result = _support._check(p, op(dy))
    assert result.ok, str(result)


def test_ops_without_an_alternative_are_timed_only_natively(rng):
    # ConvTranspose with a bias (ConvolutionBackwardData has no bias input), stride 2,
    # dilation 2 and a kernel of 3 (neither the packed Convolution of stride 1, nor the
    # MatMul of kernel == stride, nor the sub-pixel Convolution of dilation 1): only the
    # thread count is left to choose (on a small problem, where OpenMP allows)
    x, w, b = random(rng, (1, 4, 3), "f32"), random(rng, (3, 3, 3), "f32"), random(rng, (3,), "f32")
    op = og.compile_op("ConvTranspose", src=x, weights=w, bias=b, strides=2, dilations=2, tune=True)
    assert op.lowering == "native"  # (too small for its bias to run apart: _impl.epilogue_apart)
    if og._core.can_limit_threads():
        assert set(op.tuning) == {"native", "native, on 1 thread"}
    else:
        assert op.tuning is None


def test_a_tuned_operation_still_names_a_wrong_input():
    """Whichever lowering it keeps (one may take the inputs in another order), the
    operation checks its arguments as any other and names the one at fault."""
    p = _problem("ConvTransposeBackwardWeights", GEOMETRIES[1], "NXC", "f32")
    x, dy = p.args
    op = og.compile_op("ConvTransposeBackwardWeights", tune=True, src=x, diff_dst=dy, **p.kwargs)
    with pytest.raises(TypeError, match="diff_dst"):
        op(x, dy.astype(np.float64))
    with pytest.raises(TypeError, match="takes 2 inputs"):
        op(x)
    with pytest.raises(ValueError):
        op(x, dy[:, :-1])


def test_set_tuning_lets_the_functional_api_tune_new_problems():
    p = _problem("ConvTransposeBackwardWeights", GEOMETRIES[1], "NXC", "f32")
    shape_kwargs = dict(p.kwargs)
    og.cache.clear_cache()
    og.tuning.set_tuning(True)
    try:
        assert og.tuning.tuning_enabled()
        # An `out` in Fortran order: tuning times into memory of that layout, not into `out`.
        out = np.full(p.output_shape[::-1], np.nan, np.float32).T
        got = og.conv_transpose_backward_weights(*p.args, out=out, **shape_kwargs)
        [compiled] = _compiled.CACHE.ops()
        assert compiled.tuning is not None and compiled.lowering in compiled.tuning
    finally:
        og.tuning.set_tuning(False)
        og.cache.clear_cache()
    assert got is out and not og.tuning.tuning_enabled()
    result = _support._check(p, out)
    assert result.ok, str(result)
    with pytest.raises(TypeError, match="bool"):
        og.tuning.set_tuning(1)


# (kind, dtype, data_format, groups, on AVX-512, below AVX-512): the op kind the
# package runs by default on each CPU family. The rules come from timings
# (_lowering.preferred); these pin them, and the results.
DEFAULTS = [
    ("ConvTransposeBackwardWeights", "f32", "NXC", 1, "ConvolutionBackwardWeights",
     "ConvTransposeBackwardWeights"),
    ("ConvTransposeBackwardWeights", "f32", "NXC", "depthwise", "ConvolutionBackwardWeights",
     "ConvolutionBackwardWeights"),
    ("ConvTransposeBackwardWeights", "bf16", "NXC", 1, "ConvTransposeBackwardWeights",
     "ConvTransposeBackwardWeights"),
    ("ConvTransposeBackwardWeights", "f32", "NCX", 1, "ConvTransposeBackwardWeights",
     "ConvTransposeBackwardWeights"),
    ("ConvTransposeBackwardData", "f32", "NXC", 2, "Convolution", "Convolution"),
    ("ConvTransposeBackwardData", "bf16", "NXC", "depthwise", "Convolution", "Convolution"),
    ("ConvTransposeBackwardData", "f16", "NXC", "depthwise", "ConvTransposeBackwardData",
     "ConvTransposeBackwardData"),
    ("ConvTransposeBackwardWeights", "f16", "NXC", 1, "ConvTransposeBackwardWeights",
     "ConvTransposeBackwardWeights"),
    ("ConvTransposeBackwardData", "f32", "NXC", 1, "ConvTransposeBackwardData", "Convolution"),
    ("ConvTransposeBackwardData", "bf16", "NXC", 1, "ConvTransposeBackwardData",
     "ConvTransposeBackwardData"),
    ("ConvTransposeBackwardData", "f32", "NCX", 2, "ConvTransposeBackwardData",
     "ConvTransposeBackwardData"),
    # A tiny problem (these are: _lowering.TINY_FLOPS), without bias.
    ("ConvTranspose", "f32", "NXC", 1, "ConvolutionBackwardData", "ConvolutionBackwardData"),
    ("ConvTranspose", "f32", "NCX", 1, "ConvolutionBackwardData", "ConvolutionBackwardData"),
    ("ConvTranspose", "bf16", "NXC", 2, "ConvTranspose", "ConvTranspose"),
    ("ConvolutionBackwardData", "f32", "NXC", 1, "ConvolutionBackwardData", "ConvolutionBackwardData"),
]


# Where AMD Zen 4 (avx512_core_bf16) differs from the AVX-512 column: f32 NXC
# ConvTransposeBackwardData with groups = 1 runs as the forward Convolution there, as
# below AVX-512 (0.32-0.96x the native time on 18 of 20 shapes; with oneDNN 3.13
# 0.53-0.91x on 9 of 10).
ZEN4 = {("ConvTransposeBackwardData", "f32", "NXC", 1): "Convolution"}


def _default(kind, dtype, data_format, groups, on_avx512, below, isa, version):
    """The formulation DEFAULTS gives on `isa` with oneDNN `version`: the op as
    written where that pair was not measured (_lowering.measured)."""
    wide = _lowering.avx512(isa)
    if not _lowering.measured(version, isa):
        return kind
    if isa == "avx512_core_bf16" and version in ((3, 2), (3, 13)):
        on_avx512 = ZEN4.get((kind, dtype, data_format, groups), on_avx512)
    return on_avx512 if wide else below


@pytest.mark.parametrize("kind, dtype, data_format, groups, on_avx512, below", DEFAULTS)
@pytest.mark.parametrize("isa", ["avx512_core_amx", "avx512_core_bf16", "avx2", "sse41"])
@pytest.mark.parametrize("version", [(3, 2), (3, 13), (3, 14)])
def test_the_default_rules_of_each_cpu_family(kind, dtype, data_format, groups, on_avx512, below, isa,
                                              version):
    """The rule table itself, for every family and oneDNN version on any machine."""
    p = _problem(kind, GEOMETRIES[1], data_format, dtype, groups)
    in_shapes = [a.shape for a in p.args]
    plan = shapes.plan(kind, in_shapes, **p.kwargs)
    native = _lowering.lower(plan, in_shapes)
    way = _lowering.preferred(plan, in_shapes, native, dtype, isa,
                              _plan.problem(plan, in_shapes).flops, version)
    assert way.kind == _default(kind, dtype, data_format, groups, on_avx512, below, isa, version)
    said = f"(faster on oneDNN {version[0]}.{version[1]} for" in way.lowering
    assert said == (way.kind != kind), way.lowering


@pytest.mark.parametrize("kind, dtype, data_format, groups, on_avx512, below", DEFAULTS)
@pytest.mark.parametrize("geometry", [GEOMETRIES[1], GEOMETRIES[5], GEOMETRIES[6]])
def test_the_default_formulation(kind, dtype, data_format, groups, on_avx512, below, geometry):
    """The functional API and compile_op run the same formulation on this CPU, say which,
    and compute the op (truth: the reference) in a plain, a folded and a cropped geometry.
    A row's `dtype` is the one the op runs in: a bf16/f16 call that this CPU's oneDNN
    runs as the f32 chain follows the f32 rows (an f32 row checks those calls too)."""
    isa = og.system.cpu_isa()
    version = _version.linked_version()
    runs_as = _default(kind, dtype, data_format, groups, on_avx512, below, isa, version)
    if kind == "ConvTranspose" and geometry == GEOMETRIES[6]:
        runs_as = kind  # cropped: it has no other formulation (_lowering.alternatives)
    checked = []
    for call_dtype in [dtype] + (["bf16", "f16"] if dtype == "f32" else []):
        p = _problem(kind, geometry, data_format, call_dtype, groups)
        inputs = dict(zip(registry.input_names(kind), p.args))
        op = og.compile_op(kind, **inputs, **p.kwargs)
        runs_in = "f32" if isinstance(op._prepared.op, _as_f32.ChainOp) else call_dtype
        if runs_in != dtype:
            continue  # another row's call: a chain, or a native kernel of the dtype
        checked.append(call_dtype)
        assert op._prepared.op.kind == runs_as, call_dtype
        library = f"oneDNN {version[0]}.{version[1]}"
        reason = f"(faster on {library} for {dtype} NXC" + (" with groups > 1" if groups != 1 else "") + \
            f" on {isa})" if kind != "ConvTranspose" else f"(faster on {library} for a tiny problem)"
        assert (reason in op.lowering) == (runs_as != kind), op.lowering
        result = _support._check(p, op(*p.args))
        assert result.ok, str(result)
        og.cache.clear_cache()
        result = _support._check(p, getattr(og.ops, registry.function(kind))(*p.args, **p.kwargs))
        assert result.ok, str(result)
        [compiled] = _compiled.CACHE.ops()
        assert compiled.kind == runs_as
    if not checked:
        pytest.skip(f"a {dtype} call runs as the f32 chain on {isa}: the f32 rows hold it")


@pytest.mark.parametrize("bias, size, runs_as", [
    (False, 4, "ConvolutionBackwardData"), (True, 4, "ConvTranspose"), (False, 64, "ConvTranspose")])
def test_only_a_tiny_conv_transpose_without_bias_runs_as_convolution_backward_data(
        rng, bias, size, runs_as):
    """_lowering.TINY_FLOPS: 1x16xSxS -> 16 channels, k3 s2; S = 4 is 0.07 MFLOP, 64 is 19."""
    x, w = random(rng, (1, size, size, 16), "f32"), random(rng, (3, 3, 16, 16), "f32")
    args = (x, w, random(rng, (16,), "f32")) if bias else (x, w)
    names = ("src", "weights", "bias")[:len(args)]
    op = og.compile_op("ConvTranspose", **dict(zip(names, args)), strides=2)
    isa = og.system.cpu_isa()
    if not _lowering.measured(_version.linked_version(), isa):
        runs_as = "ConvTranspose"  # an unmeasured oneDNN and CPU family: as written
    assert op._prepared.op.kind == runs_as
    # f32 NXC, 144 products per output: within rounding of the float64 reference
    np.testing.assert_allclose(op(*args), og.reference.conv_transpose(*args, strides=2),
                               rtol=1e-5, atol=1e-5)


def test_the_default_falls_back_to_the_native_op(monkeypatch):
    """A preferred formulation that oneDNN refuses is a preference, not a need: the
    call compiles the op as written instead."""
    real = _compiled.CompiledOp

    def refuse_the_alternative(kind, *args, **kwargs):
        if kind == "ConvolutionBackwardWeights":
            raise og.UnsupportedError("refused for the test", "unimplemented")
        return real(kind, *args, **kwargs)

    monkeypatch.setattr(_compiled, "CompiledOp", refuse_the_alternative)
    # Depthwise: its default is the alternative on every CPU family (DEFAULTS).
    p = _problem("ConvTransposeBackwardWeights", GEOMETRIES[1], "NXC", "f32", "depthwise")
    x, dy = p.args
    op = og.compile_op("ConvTransposeBackwardWeights", src=x, diff_dst=dy, **p.kwargs)
    assert op.lowering == "native" and op._prepared.op.kind == "ConvTransposeBackwardWeights"
    result = _support._check(p, op(x, dy))
    assert result.ok, str(result)


def test_tuning_a_problem_whose_default_is_an_alternative_times_the_native_op_too():
    p = _problem("ConvTransposeBackwardWeights", GEOMETRIES[1], "NXC", "f32", "depthwise")
    x, dy = p.args
    v = _version.linked_version()
    if not _lowering.measured(v, og.system.cpu_isa()):
        pytest.skip(f"oneDNN {v} was not measured on this CPU family: no default alternative")
    op = og.compile_op("ConvTransposeBackwardWeights", src=x, diff_dst=dy, threads=0,
                       tune=True, **p.kwargs)
    assert set(op.tuning) == {"native", "ConvolutionBackwardWeights of diff_dst and src (faster on "
                                        f"oneDNN {v[0]}.{v[1]} for f32 NXC with groups > 1 on "
                                        f"{og.system.cpu_isa()})"}
    # the fastest where it won clearly, else the default (the alternative here)
    assert op.lowering == min(op.tuning, key=op.tuning.get) or "default stands" in op.tuning_verdict

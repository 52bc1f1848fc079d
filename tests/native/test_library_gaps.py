"""The package lowers an op only where the linked oneDNN needs it.

Every lowering in ``_impl/lowering.py`` was written for a gap of oneDNN 3.2 (it
refuses the op as the spec writes it, or computes other numbers) and was found
unchanged in oneDNN 3.13.2 (PyPI's onednn 2026.1.0; docs/onednn-3.13.md). Each
feature of ``support.FEATURES`` is run here twice on the linked library, as the
spec writes it and through the package: a feature the package lowers must still
be a gap of this library, so a oneDNN that closes one fails this test and names
the lowering that should then hand the op over as written for that version.
Truth: the float64 reference, with the package's bound (``support._check``).
"""

import pytest

import onednn_graph as og
from onednn_graph._impl import registry
from onednn_graph._tools import support as _support

#: Lowerings kept where oneDNN computes this small case right as written, and why.
KEPT = {
    # 3.2 and 3.13 resolve SAME pads of the backward ops with the convolution rule,
    # on another tensor's size than ConvTranspose uses: on this case the numbers
    # agree, on others the op is not the gradient of its own ConvTranspose
    # (test_lowering's auto_pad cases). Resolving explicitly keeps the three adjoint.
    ("ConvTransposeBackwardData", "auto_pad same_upper"),
}

CASES = [(kind, feature) for kind in registry.KINDS for feature, change in _support.FEATURES.items()
         if not (change.get("shape_form") and not registry.spec(kind).shape_attr)]


@pytest.mark.parametrize("kind, feature", CASES, ids=[f"{k}-{f}" for k, f in CASES])
def test_the_package_lowers_only_what_this_onednn_cannot_run_as_written(kind, feature):
    p = _support.problem(_support.Case(kind, **_support.FEATURES[feature]))
    literal, package = _support.literal(p), _support.package(p)
    v = og.system.onednn_version()
    assert package.status in ("native", "lowered"), f"{kind} {feature}: the package gave {package}"
    if package.status == "native":
        assert literal.status == "native", (
            f"{kind} {feature}: handed over as written, yet oneDNN {v.major}.{v.minor} as "
            f"written gives {literal}")
    elif (kind, feature) not in KEPT and not feature.startswith("shape as s32"):
        # (the s32 shape input is read in Python on every version: its value is known
        # only when the partition executes)
        assert literal.status != "native", (
            f"{kind} {feature}: oneDNN {v.major}.{v.minor} runs it as written, so the "
            f"lowering '{package.detail}' is not needed on this version; hand it over "
            "natively there (_impl/lowering.py)")


def test_onednn_still_fuses_a_skip_of_another_dtype_wrongly():
    """_impl.kept_apart keeps a dequantized skip out of the int8 ConvTranspose partition
    where the result is quantized to another dtype: oneDNN 3.2 and 3.13 fuse it as a
    "sum" read in the result's dtype. Built here on the raw binding (no kept_apart): a
    oneDNN that gets it right fails this test, and the rewrite can then be dropped for it."""
    import numpy as np
    from onednn_graph import _core, post, quant
    from onednn_graph._impl import compiled, kept_apart

    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (2, 5, 5, 8)).astype(np.uint8)
    w = rng.integers(-64, 65, (3, 3, 16, 8)).astype(np.int8)
    b = rng.standard_normal(16).astype(np.float32)
    shape = (2, 11, 11, 16)
    skip = rng.integers(0, 256, shape).astype(np.uint8)

    def lt(i, dtype, s):
        return _core.LogicalTensor(i, dtype, s, list(np.empty(s, np.int8).strides))
    per_tensor = {"qtype": "per_tensor", "axis": 1}
    ops = [
        _core.Op(0, "Dequantize", [lt(0, "u8", x.shape)], [lt(10, "f32", x.shape)],
                 dict(per_tensor, scales=[0.02], zps=[128])),
        _core.Op(1, "Dequantize", [lt(1, "s8", w.shape)], [lt(11, "f32", w.shape)],
                 dict(per_tensor, scales=[0.01], zps=[0])),
        _core.Op(2, "ConvTranspose", [lt(10, "f32", x.shape), lt(11, "f32", w.shape), lt(2, "f32", (16,))],
                 [lt(12, "f32", shape)], {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0],
                                          "dilations": [1, 1], "data_format": "NXC", "weights_format": "XOI"}),
        _core.Op(3, "Dequantize", [lt(3, "u8", shape)], [lt(13, "f32", shape)],
                 dict(per_tensor, scales=[0.03], zps=[5])),
        _core.Op(4, "Add", [lt(12, "f32", shape), lt(13, "f32", shape)], [lt(14, "f32", shape)],
                 {"auto_broadcast": "numpy"}),
        _core.Op(5, "Quantize", [lt(14, "f32", shape)], [lt(15, "s8", shape)],
                 dict(per_tensor, scales=[0.05], zps=[3])),
    ]
    assert [t.id for t in kept_apart.sum_operands(ops)] == [13]
    g = _core.Graph("cpu", "strict")
    for op in ops:
        g.add_op(op)
    g.finalize()
    [p] = g.get_partitions("fusion")
    out = np.zeros(shape, np.int8)
    arrays = {0: x, 1: w, 2: b, 3: skip, 15: out}
    engine = compiled.engine()
    p.compile(p.input_ports, p.output_ports, engine).execute(
        compiled.stream(), [_core.Tensor(t, engine, arrays[t.id]) for t in p.input_ports],
        [_core.Tensor(p.output_ports[0], engine, out)])
    want = og.reference.conv_transpose(quant.per_tensor(x, 0.02, 128), quant.per_tensor(w, 0.01), b,
                                       strides=2, post_ops=[post.add(quant.per_tensor(skip, 0.03, 5))],
                                       quantize=quant.to("s8", 0.05, 3))
    off = np.abs(out.astype(int) - want.astype(int)).max()
    v = og.system.onednn_version()
    assert off > 1, (f"oneDNN {v.major}.{v.minor} fuses a u8 skip into an s8 result right "
                     f"(off by at most {off}): _impl.kept_apart is not needed on this version")


# Geometries where oneDNN 3.2's brgconv_strided may walk the kernel one row at a time
# (_impl.epilogue_apart): the DCGAN / pix2pix upsampler (wrong from 512 input channels
# on AMD Zen 4, 1024 capped at AVX2), kernel == stride, kernel 8 stride 4 (from 64
# channels), and shapes it gets right.
_EPILOGUE_CASES = [(512, 256, 4, 2, 1), (1024, 256, 4, 2, 1), (1024, 64, 4, 4, 0), (64, 64, 8, 4, 2),
                   (256, 128, 4, 2, 1), (1024, 256, 2, 2, 0), (512, 256, 3, 1, 1)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("c_in, c_out, k, s, p", _EPILOGUE_CASES,
                         ids=[f"{ci}to{co}-k{k}s{s}p{p}" for ci, co, k, s, p in _EPILOGUE_CASES])
def test_the_probe_finds_exactly_where_onednn_repeats_the_bias(c_in, c_out, k, s, p, threads):
    """``_core.epilogue_repeats`` (what the package asks before compiling a ConvTranspose
    with an epilogue) against the kernel itself: a ConvTranspose with its bias compiled
    as one partition, on the raw binding (no workaround), on exact inputs. Where the
    probe says 1 the result is the reference's; where it says n > 1, some output holds
    the bias more than once and none more than n times. A oneDNN without the defect
    (3.3 and later) is never probed, and must be right."""
    import numpy as np
    from onednn_graph._impl import compiled, epilogue_apart

    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, (2, c_in, 4, 4)).astype(np.float32)
    w = rng.integers(-2, 3, (c_in, c_out, k, k)).astype(np.float32)
    b = rng.integers(1, 3, c_out).astype(np.float32)  # a bias never 0: each extra one shows
    kw = dict(strides=s, pads_begin=p, pads_end=p, data_format="NCX", weights_format="IOX")
    want = og.reference.conv_transpose(x, w, b, **kw)
    attrs = {"strides": [s, s], "pads_begin": [p, p], "pads_end": [p, p], "dilations": [1, 1],
             "auto_pad": "None", "groups": 1, "output_padding": [0, 0], "data_format": "NCX",
             "weights_format": "IOX"}
    op = compiled.CompiledOp("ConvTranspose", attrs, "f32", [compiled.meta(a) for a in (x, w, b)],
                             compiled.meta(want), threads=threads)
    got = np.empty_like(want)
    op.execute([x, w, b], got)
    times = np.round((got - og.conv_transpose(x, w, **kw)) / b[:, None, None]).max()
    count = epilogue_apart.repeats("ConvTranspose", attrs, [x.shape, w.shape], want.shape,
                                      ("f32",) * 4, op.threads)
    v = og.system.onednn_version()
    if (v.major, v.minor) >= epilogue_apart.FIXED_IN:
        assert count == 1 and np.array_equal(got, want), f"oneDNN {v} repeats the bias"
        return
    assert np.array_equal(got, want) == (count == 1), (count, times)
    assert times == count, (count, times)

"""Bad input: a clear exception naming the argument and the rule, nothing lost.

Every case in CASES calls a public entry point (the functional API, its legacy
alias, the low-level objects) with one thing wrong, and must raise the stated
exception type with a message matching the stated pattern, leaving every array
it was given byte-for-byte unchanged (an ``out`` keeps its contents). The cases
run in child interpreters, one per group, so a crash of the interpreter fails
the cases of that group instead of the whole run.

Valid but unusual inputs (strided views, NaN/Inf) run in-process below and are
compared with the reference. Lists are not accepted as arrays: they would
become float64 or int64 arrays, which no op takes, so they are refused with a
TypeError that says what is expected.
"""

import json
from collections import namedtuple
from functools import lru_cache

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import reference as R
from helpers import assert_matches_reference, random, run_python

Case = namedtuple("Case", "group id exc match fn args kwargs")
CASES = []


def bad(group, id, exc, match, fn, *args, **kwargs):
    CASES.append(Case(group, id, exc, match, fn, args, kwargs))


_rng = np.random.default_rng(5)


def _a(*shape, dtype=np.float32):
    return _rng.uniform(-1, 1, shape).astype(dtype)


# One small valid problem per entry point (rank 1, NXC, default weights
# formats): src (1, 4, 2); ConvTranspose weights XOI (3, 3, 2); dst (1, 6, 3);
# ConvolutionBackwardData weights XIO (3, 2, 3), diff_dst (1, 4, 3).
X, W, DY = _a(1, 4, 2), _a(3, 3, 2), _a(1, 6, 3)
WC, DYC = _a(3, 2, 3), _a(1, 4, 3)
OPS = {  # name -> function, valid args, the result's shape, names of the array args
    "ct": (og.conv_transpose, (X, W), (1, 6, 3), ("src", "weights")),
    "ctbd": (og.conv_transpose_backward_data, (DY, W), (1, 4, 2), ("diff_dst", "weights")),
    "ctbw": (og.conv_transpose_backward_weights, (X, DY, (3, 3, 2)), (3, 3, 2),
             ("src", "diff_dst")),
    "cbd": (og.convolution_backward_data, (DYC, WC, (1, 6, 2)), (1, 6, 2),
            ("diff_dst", "weights")),
    "legacy": (og.conv_transpose_backprop_filters, (X, DY, (3, 2, 3)), (3, 2, 3),
               ("input_forward", "output_delta")),
}
SHAPE_ARG = {"ctbw": "weights_shape", "cbd": "dst_shape", "legacy": "filter_shape"}


def _sentinel(shape, dtype=np.float32):
    return np.full(shape, 7.0, dtype)


def _with(args, i, value):
    return args[:i] + (value,) + args[i + 1:]


# --- attributes, for every entry point (each call also carries an `out` that
# must keep its contents) ---------------------------------------------------
ATTRS = [
    ("strides0", dict(strides=0), ValueError, r"strides must be >= 1, got 0"),
    ("strides-neg", dict(strides=[-2]), ValueError, r"strides\[0\] must be >= 1, got -2"),
    ("dilations0", dict(dilations=0), ValueError, r"dilations must be >= 1, got 0"),
    ("dilations-neg", dict(dilations=[-1]), ValueError, r"dilations\[0\] must be >= 1"),
    ("output_padding-neg", dict(output_padding=-1), ValueError, r"output_padding must be >= 0"),
    ("strides-len2", dict(strides=[1, 1]), ValueError,
     r"strides must have 1 entries \(one per spatial axis\), got 2"),
    ("pads_end-len0", dict(pads_end=[]), ValueError, r"pads_end must have 1 entries"),
    ("strides-float", dict(strides=2.0), TypeError, r"strides must be an int or a list of ints, got float"),
    ("strides-str", dict(strides="2"), TypeError, r"strides must be an int or a list of ints, got str"),
    ("dilations-float-item", dict(dilations=[1.5]), TypeError, r"dilations\[0\] must be an int, got float"),
    ("pads_begin-bool", dict(pads_begin=False), TypeError, r"pads_begin must be an int or a list of ints, got bool"),
    ("pads_end-bool-item", dict(pads_end=[True]), TypeError, r"pads_end\[0\] must be an int, got bool"),
    ("strides-huge", dict(strides=2**64), ValueError, r"strides must be < 2\*\*63"),
    ("groups-bool", dict(groups=True), TypeError, r"groups must be an int, got bool"),
    ("groups-float", dict(groups=1.0), TypeError, r"groups must be an int, got float"),
    ("groups-str", dict(groups="1"), TypeError, r"groups must be an int, got str"),
    ("groups0", dict(groups=0), ValueError, r"groups must be >= 1, got 0"),
    ("auto_pad-unknown", dict(auto_pad="same"), ValueError,
     r"auto_pad must be one of none, same_upper, same_lower, valid, got 'same'"),
    ("auto_pad-None", dict(auto_pad=None), TypeError, r"auto_pad must be a str, got NoneType"),
    ("data_format-unknown", dict(data_format="NHWC"), ValueError, r"data_format must be one of NXC, NCX, got 'NHWC'"),
    ("data_format-lower", dict(data_format="nxc"), ValueError, r"data_format must be one of"),
    ("unknown-keyword", dict(stride=2), TypeError, r"unexpected keyword argument 'stride'"),
]
for op, (fn, args, out_shape, _) in OPS.items():
    for id, kw, exc, match in ATTRS:
        bad("attrs", f"{op}-{id}", exc, match, fn, *args, out=_sentinel(out_shape), **kw)
    fmt = "filter_format" if op == "legacy" else "weights_format"
    bad("attrs", f"{op}-{fmt}-unknown", ValueError, rf"{fmt} must be one of", fn, *args,
        out=_sentinel(out_shape), **{fmt: "OIHW"})
    bad("attrs", f"{op}-{fmt}-int", TypeError, rf"{fmt} must be a str, got int", fn, *args,
        out=_sentinel(out_shape), **{fmt: 1})
# A format of the other family is not a spelling of this op's.
bad("attrs", "ct-weights_format-OIX", ValueError, r"weights_format must be one of XOI, IOX, got 'OIX'",
    og.conv_transpose, X, W, weights_format="OIX")
bad("attrs", "cbd-weights_format-IOX", ValueError, r"weights_format must be one of XIO, OIX, got 'IOX'",
    og.convolution_backward_data, DYC, WC, (1, 6, 2), weights_format="IOX")
bad("attrs", "legacy-filter_format-IOX", ValueError, r"filter_format must be one of OIX, XIO, got 'IOX'",
    og.conv_transpose_backprop_filters, X, DY, (3, 2, 3), filter_format="IOX")

# --- arrays: type, rank, dtype, zero-sized, for every entry point ------------
for op, (fn, args, out_shape, names) in OPS.items():
    for i, name in enumerate(names):
        for kind, value in (("None", None), ("list", [[[1.0, 2.0]]]), ("str", "abc"), ("int", 3)):
            bad("arrays", f"{op}-{name}-{kind}", TypeError,
                rf"{name} must be an array \(numpy.ndarray, a CPU torch.Tensor, .*\), "
                rf"got {type(value).__name__}", fn, *_with(args, i, value))
        a = args[i]
        for dt, shown in ((np.float64, "float64"), (np.int64, "int64"), (object, "object"),
                          (np.dtype(">f4"), ">f4"), (np.complex64, "complex64"), (bool, "bool")):
            bad("arrays", f"{op}-{name}-{shown}", TypeError,
                rf"{name}: unsupported dtype {shown}; the ops take f32 \(float32\), "
                r"bf16 \(bfloat16\), f16 \(float16\)$", fn, *_with(args, i, a.astype(dt)))
        bad("arrays", f"{op}-{name}-int32", TypeError, rf"{name}: dtype int32 \(s32\) is only used for shape",
            fn, *_with(args, i, a.astype(np.int32)))
        bad("arrays", f"{op}-{name}-mixed-f16", TypeError,
            r"all tensors must share one dtype, got .*float16", fn, *_with(args, i, a.astype(np.float16)),
            out=_sentinel(out_shape))
        bad("arrays", f"{op}-{name}-zero-sized", ValueError, r"every dimension must be >= 1",
            fn, *_with(args, i, np.zeros((0,) + a.shape[1:], np.float32)))
        bad("arrays", f"{op}-{name}-rank4", ValueError, r"must have rank \d \(like the data tensors\)",
            fn, *_with(args, i, a[..., None]))
    bad("arrays", f"{op}-rank2", ValueError, r"\(1, \d+\) must have rank >= 3 \(N, C and at least one spatial axis\)",
        fn, *_with(args, 0, args[0].reshape(1, -1)))
    bad("arrays", f"{op}-rank9", ValueError, r"must have rank 9 \(like the data tensors\)",
        fn, *_with(args, 0, args[0].reshape((1,) * 6 + args[0].shape)))

# Channel counts that disagree, groups that do not divide them.
bad("arrays", "ct-channels", ValueError, r"the I axis \(2\) must equal the channels of src \(3\)",
    og.conv_transpose, _a(1, 4, 3), W)
bad("arrays", "ct-groups", ValueError, r"groups \(3\) must divide the channels of src \(2\)",
    og.conv_transpose, X, W, groups=3)
bad("arrays", "ct-bias-shape", ValueError, r"bias \(4,\) must have shape \(3,\)",
    og.conv_transpose, X, W, _a(4))
bad("arrays", "ct-bias-dtype", TypeError, r"all tensors must share one dtype, got .*bias: float16",
    og.conv_transpose, X, W, _a(3, dtype=np.float16))
bad("arrays", "ctbd-channels", ValueError, r"the O axis \(3\) times groups \(1\) must equal the channels of diff_dst \(4\)",
    og.conv_transpose_backward_data, _a(1, 6, 4), W)
bad("arrays", "ctbd-groups", ValueError, r"groups \(3\) must divide the weights' I axis \(C_in\) \(2\)",
    og.conv_transpose_backward_data, _a(1, 6, 3), _a(3, 1, 2), groups=3)
bad("arrays", "ctbw-batch", ValueError, r"src and diff_dst must have the same batch size N, got 1 and 2",
    og.conv_transpose_backward_weights, X, _a(2, 6, 3), (3, 3, 2))
bad("arrays", "ctbw-groups", ValueError, r"groups \(3\) must divide the channels of src \(2\)",
    og.conv_transpose_backward_weights, X, DY, (3, 1, 2), groups=3)
bad("arrays", "ctbw-spatial", ValueError, r"spatial axis 0: src size 4 and diff_dst size 7 do not fit kernel 3",
    og.conv_transpose_backward_weights, X, _a(1, 7, 3), (3, 3, 2))
bad("arrays", "cbd-channels", ValueError, r"the O axis \(3\) must equal the channels of diff_dst \(2\)",
    og.convolution_backward_data, _a(1, 4, 2), WC, (1, 6, 2))
bad("arrays", "cbd-groups", ValueError, r"groups \(2\) must divide the channels of diff_dst \(3\)",
    og.convolution_backward_data, DYC, WC, (1, 6, 4), groups=2)
bad("arrays", "ct-weights-rank", ValueError, r"weights \(3, 3, 2, 1\) must have rank 3 \(like the data tensors\)",
    og.conv_transpose, X, W[..., None])
bad("arrays", "ct-empty-output", ValueError, r"output spatial size \(-2,\) is empty",
    og.conv_transpose, X, W, pads_begin=4, pads_end=4)

# --- the shape argument of the ops that take one -----------------------------
for op, name in SHAPE_ARG.items():
    fn, args, out_shape, _ = OPS[op]
    s = args[2]
    cases = [
        ("len2", s[:2], ValueError, rf"{name}|weights_shape|dst_shape"),
        ("negative", (s[0], -s[1], s[2]), ValueError, rf"{name}\[1\] must be >= 1, got -"),
        ("zero", (0, s[1], s[2]), ValueError, rf"{name}\[0\] must be >= 1, got 0"),
        ("float-item", (float(s[0]), s[1], s[2]), TypeError, rf"{name}\[0\] must be an int, got float"),
        ("bool-item", (True, s[1], s[2]), TypeError, rf"{name}\[0\] must be an int, got bool"),
        ("str", "332", TypeError, rf"{name} must be a list of ints, got str"),
        ("float32-array", np.array(s, np.float32), TypeError, rf"{name} as an array must be int32"),
        ("2d-array", np.array([s], np.int32), ValueError, rf"{name} must be one-dimensional"),
        ("negative-array", np.array((s[0], -1, s[2]), np.int32), ValueError, rf"{name}\[1\] must be >= 1"),
        ("huge", (s[0], 2**63, s[2]), ValueError, rf"{name}\[1\] must be < 2\*\*63"),
        ("inconsistent", (s[0] + 1, s[1], s[2] + 1), ValueError,
         r"the I axis|must equal the channels|do not fit|fit kernel|dst_shape"),
    ]
    for id, value, exc, match in cases:
        bad("shapes", f"{op}-{name}-{id}", exc, match, fn, *_with(args, 2, value),
            out=_sentinel(out_shape))

# --- out ---------------------------------------------------------------------
for op, (fn, args, out_shape, _) in OPS.items():
    ro = _sentinel(out_shape)
    ro.flags.writeable = False
    bad("out", f"{op}-read-only", ValueError, r"out is read-only", fn, *args, out=ro)
    bad("out", f"{op}-shape", ValueError, r"out has shape \(1, 2\), the result has shape",
        fn, *args, out=_sentinel((1, 2)))
    bad("out", f"{op}-transposed-shape", ValueError, r"out has shape",
        fn, *args, out=_sentinel(out_shape[1:] + out_shape[:1]))
    bad("out", f"{op}-dtype", TypeError, r"out has dtype float16, the result has dtype float32",
        fn, *args, out=_sentinel(out_shape, np.float16))
    bad("out", f"{op}-float64", TypeError, r"out has dtype float64", fn, *args,
        out=_sentinel(out_shape, np.float64))
    bad("out", f"{op}-list", TypeError, r"out must be an array \(numpy.ndarray, .*\), got list", fn, *args,
        out=_sentinel(out_shape).tolist())
    bad("out", f"{op}-negative-strides", ValueError, r"out must have positive, item-aligned strides",
        fn, *args, out=_sentinel(out_shape)[:, ::-1])
    # out aliasing the first input: one buffer large enough for both.
    size = max(int(np.prod(out_shape)), args[0].size)
    buf = _a(size)
    first = buf[:args[0].size].reshape(args[0].shape)
    bad("out", f"{op}-overlaps-input", ValueError, r"out shares memory with input 0",
        fn, *_with(args, 0, first), out=buf[:int(np.prod(out_shape))].reshape(out_shape))

# --- sizes beyond memory or int64: refused before anything is allocated -----
bad("sizes", "ct-int64-overflow", ValueError,
    r"ConvTranspose: the result of shape \(1, \d+, 3\) would hold \d+ bytes, more than 2\*\*63-1 bytes",
    og.conv_transpose, X, W, strides=2**61)
bad("sizes", "ct-exceeds-memory", MemoryError,
    r"ConvTranspose: cannot allocate the result of shape \(1, \d+, 3\) \(\d+ bytes\)",
    og.conv_transpose, X, W, strides=2**46)
# A kernel of 2**48 + 1 taps fits src 1 -> diff_dst 1 with pads 2**48 (6 PB of weights).
bad("sizes", "ctbw-exceeds-memory", MemoryError, r"cannot allocate the result of shape \(281474976710657, 3, 2\)",
    og.conv_transpose_backward_weights, _a(1, 1, 2), _a(1, 1, 3), (2**48 + 1, 3, 2), pads_begin=2**48)
bad("sizes", "cbd-int64-overflow", ValueError, r"the result of shape \(1, 4611686018427387904, 2\) would hold",
    og.convolution_backward_data, _a(1, 1, 3), _a(1, 2, 3), (1, 2**62, 2), strides=2**62)
# A broadcast input that oneDNN cannot describe would need a copy beyond memory.
bad("sizes", "ct-broadcast-input-copy", MemoryError, r"src",
    og.conv_transpose, np.broadcast_to(np.float32(1), (1, 2**46, 2)), W)


# --- low-level objects -------------------------------------------------------
def _lt(id, shape, dtype="f32", **kw):
    return og.LogicalTensor(id, dtype, shape, **kw)


CT_ATTRS = {"strides": [1], "pads_begin": [0], "pads_end": [0], "dilations": [1]}


def _op(kind="ConvTranspose", attrs=None, inputs=None, outputs=None, **kw):
    inputs = [_lt(0, (1, 4, 2)), _lt(1, (3, 3, 2))] if inputs is None else inputs
    outputs = [_lt(2, None)] if outputs is None else outputs
    return og.Op(0, kind, inputs, outputs, {**CT_ATTRS, **(attrs or {})}, **kw)


@lru_cache(maxsize=None)
def _compiled(kind="ConvTranspose"):
    """A compiled single-op partition: (compiled, engine, input lts, output lt)."""
    x, w = _lt(0, (1, 4, 2)), _lt(1, (3, 3, 2))
    y = _lt(2, (1, 6, 3) if kind == "ConvTranspose" else (3, 3, 2))
    ins = [x, w] if kind == "ConvTranspose" else [x, _lt(1, (1, 6, 3)), _lt(3, (3,), "s32")]
    g = og.Graph()
    g.add_op(og.Op(0, kind, ins, [y], CT_ATTRS))
    g.finalize()
    [p] = g.get_partitions()
    e = og.Engine()
    return p.compile(ins, [y], e), e, ins, y


def _execute(inputs=None, outputs=None, stream=True, kind="ConvTranspose"):
    cp, e, ins, y = _compiled(kind)
    if inputs is None:
        inputs = [og.Tensor(lt, e, a) for lt, a in zip(ins, (X, W))]
    if outputs is None:
        outputs = [og.Tensor(y, e, np.zeros(y.shape, np.float32))]
    cp.execute(og.Stream(e) if stream is True else stream, inputs, outputs)


def _tensor(lt_shape, array, dtype="f32", **kw):
    return og.Tensor(_lt(0, lt_shape, dtype, **kw), og.Engine(), array)


def _partition(inputs=None, outputs=None, engine=None):
    g = og.Graph()
    g.add_op(_op(inputs=[_lt(0, (1, 4, 2)), _lt(1, (3, 3, 2))], outputs=[_lt(2, (1, 6, 3))]))
    g.finalize()
    [p] = g.get_partitions()
    return p.compile(inputs if inputs is not None else [_lt(0, (1, 4, 2)), _lt(1, (3, 3, 2))],
                     outputs if outputs is not None else [_lt(2, (1, 6, 3))],
                     og.Engine() if engine is None else engine)


def _graph(step):
    g = og.Graph()
    if step == "partitions-before-finalize":
        g.get_partitions()
    g.add_op(_op())
    g.finalize()
    if step == "add-after-finalize":
        g.add_op(_op())
    if step == "policy":
        g.get_partitions("greedy")


L = "lowlevel"
bad(L, "lt-id-neg", ValueError, r"LogicalTensor: id must be >= 0, got -1", _lt, -1, (1,))
bad(L, "lt-dtype-f64", TypeError, r"unsupported dtype 'f64'", _lt, 0, (1,), "f64")
bad(L, "lt-dtype-float64", TypeError, r"unsupported dtype float64; supported: f32", _lt, 0, (1,), np.float64)
bad(L, "lt-dtype-big-endian", TypeError, r"unsupported dtype >f4", _lt, 0, (1,), np.dtype(">f4"))
bad(L, "lt-dtype-object", TypeError, r"unsupported dtype object", _lt, 0, (1,), object)
bad(L, "lt-shape-neg", ValueError, r"shape entries must be >= 0 or -1", _lt, 0, (2, -2))
bad(L, "lt-shape-str", TypeError, r"shape", _lt, 0, "abc")
bad(L, "lt-shape-float", TypeError, r"shape", _lt, 0, (1.5, 2))
bad(L, "lt-shape-13d", ValueError, r"at most 12 dimensions, got 13", _lt, 0, (1,) * 13)
bad(L, "lt-shape-overflow", ValueError, r"LogicalTensor: shape .* more than 2\*\*63-1 bytes",
    _lt, 0, (2**40, 2**40))
bad(L, "lt-strides-len", ValueError, r"strides must have one entry per dimension", _lt, 0, (2, 3), strides=(1,))
bad(L, "lt-strides-neg", ValueError, r"LogicalTensor: strides must be >= 1", _lt, 0, (2, 3), strides=(-3, 1))
bad(L, "lt-strides-zero", ValueError, r"LogicalTensor: strides must be >= 1", _lt, 0, (2, 3), strides=(0, 1))
bad(L, "lt-strides-overflow", ValueError, r"more than 2\*\*63-1 bytes", _lt, 0, (3, 3), strides=(2**62, 1))
bad(L, "lt-strides-no-shape", ValueError, r"strides need a shape", _lt, 0, None, strides=(1,))
bad(L, "lt-layout", ValueError, r"unknown layout 'blocked'", _lt, 0, (2,), layout="blocked")
bad(L, "lt-property", ValueError, r"unknown property 'mutable'", _lt, 0, (2,), property="mutable")

bad(L, "op-id-neg", ValueError, r"id must be >= 0, got -1", og.Op, -1, "ConvTranspose", [], [])
bad(L, "op-id-bool", TypeError, r"id must be an int, got bool", og.Op, True, "ConvTranspose", [], [])
bad(L, "op-kind-int", TypeError, r"kind must be a str, got int", og.Op, 0, 5, [], [])
bad(L, "op-kind-unknown", ValueError, r"unknown op kind 'Deconv'", og.Op, 0, "Deconv", [], [])
bad(L, "op-inputs-str", TypeError, r"inputs must be a list of LogicalTensor", og.Op, 0, "ConvTranspose", "ab", [])
bad(L, "op-inputs-arrays", TypeError, r"inputs must be a list of LogicalTensor", _op, inputs=[X, W])
bad(L, "op-name-int", TypeError, r"name must be a str, got int", _op, name=5)
bad(L, "op-attrs-list", TypeError, r"attrs must be a dict, got list", og.Op, 0, "ConvTranspose",
    [_lt(0, None), _lt(1, None)], [_lt(2, None)], [("strides", [1])])
bad(L, "op-n-inputs", ValueError, r"ConvTranspose takes 2..3 inputs and 1 output, got 1 and 1",
    _op, inputs=[_lt(0, (1, 4, 2))])
for id, attrs, exc, match in [
        ("unknown", {"stride": [1]}, ValueError, r"unknown attribute 'stride'; the specification lists strides"),
        ("name-int", {1: [1]}, TypeError, r"attribute names must be str, got 1"),
        ("strides-str", {"strides": "1"}, TypeError, r"strides must be a list of ints, got str"),
        ("strides-int", {"strides": 1}, TypeError, r"strides must be a list of ints, got int"),
        ("strides-len", {"strides": [1, 1]}, ValueError, r"strides must have 1 entries"),
        ("strides0", {"strides": [0]}, ValueError, r"strides\[0\] must be >= 1, got 0"),
        ("strides-huge", {"strides": [2**63]}, ValueError, r"strides\[0\] must be < 2\*\*63"),
        ("dilations0", {"dilations": [0]}, ValueError, r"dilations\[0\] must be >= 1"),
        ("output_padding-neg", {"output_padding": [-1]}, ValueError, r"output_padding\[0\] must be >= 0"),
        ("groups-bool", {"groups": True}, TypeError, r"groups must be an int, got bool"),
        ("groups-float", {"groups": 2.0}, TypeError, r"groups must be an int, got float"),
        ("auto_pad", {"auto_pad": "same"}, ValueError, r"auto_pad must be one of"),
        ("data_format", {"data_format": "NCHW"}, ValueError, r"data_format must be one of NXC, NCX"),
        ("weights_format", {"weights_format": "OIX"}, ValueError, r"weights_format must be one of XOI, IOX"),
        ("weights_shape", {"weights_shape": [3, 3, 2]}, ValueError, r"unknown attribute 'weights_shape'"),
]:
    bad(L, f"op-attr-{id}", exc, match, _op, attrs=attrs)
bad(L, "op-attr-missing", ValueError, r"missing required attribute\(s\) dilations", og.Op, 0,
    "ConvTranspose", [_lt(0, None), _lt(1, None)], [_lt(2, None)],
    {"strides": [1], "pads_begin": [0], "pads_end": [0]})
bad(L, "op-legacy-filter_format", ValueError, r"filter_format must be one of OIX, XIO, got 'IOX'",
    _op, "ConvTransposeBackpropFilters", {"filter_format": "IOX"},
    [_lt(0, (1, 4, 2)), _lt(1, (1, 6, 3))])
bad(L, "op-legacy-weights_format", ValueError, r"unknown attribute 'weights_format'",
    _op, "ConvTransposeBackpropFilters", {"weights_format": "XOI"}, [_lt(0, (1, 4, 2)), _lt(1, (1, 6, 3))])
bad(L, "op-ctbw-weights_shape-neg", ValueError, r"weights_shape\[1\] must be >= 1",
    _op, "ConvTransposeBackwardWeights", {"weights_shape": [3, -3, 2]}, [_lt(0, (1, 4, 2)), _lt(1, (1, 6, 3))])
bad(L, "op-ctbw-weights_shape-str", TypeError, r"weights_shape must be a list of ints, got str",
    _op, "ConvTransposeBackwardWeights", {"weights_shape": "332"}, [_lt(0, (1, 4, 2)), _lt(1, (1, 6, 3))])

bad(L, "graph-engine-kind", ValueError, r"unknown engine kind 'tpu'", og.Graph, "tpu")
bad(L, "graph-fpmath", ValueError, r"unknown fpmath_mode 'f64'", og.Graph, "cpu", "f64")
bad(L, "graph-add-non-op", TypeError, r"add_op takes an onednn_graph.Op, got str", og.Graph().add_op, "op")
bad(L, "graph-add-core-op", TypeError, r"add_op takes an onednn_graph.Op, got Op",
    og.Graph().add_op, og._core.Op(0, "ReLU", [_lt(0, (1,))], [_lt(1, (1,))]))
bad(L, "graph-partitions-before-finalize", og.Error, r"finalize", _graph, "partitions-before-finalize")
bad(L, "graph-add-after-finalize", og.Error, r"add_op: the graph is finalized", _graph, "add-after-finalize")
bad(L, "graph-policy", ValueError, r"unknown partition policy 'greedy'", _graph, "policy")
bad(L, "graph-inconsistent-shapes", ValueError, r"the I axis \(3\) must equal the channels of src \(2\)",
    og.Graph().add_op, _op(inputs=[_lt(0, (1, 4, 2)), _lt(1, (3, 3, 3))]))

bad(L, "compile-engine-str", TypeError, r"engine", _partition, engine="cpu")
bad(L, "compile-missing-input", og.Error, r"invalid|input", _partition, inputs=[_lt(0, (1, 4, 2))])
bad(L, "compile-none-input", TypeError, r"compile: inputs must be a list of LogicalTensor", _partition, inputs=[None, _lt(1, (3, 3, 2))])
bad(L, "compile-other-dtype", ValueError, r"compile: input 0 has dtype f16, the partition's port has f32", _partition,
    inputs=[_lt(0, (1, 4, 2), "f16"), _lt(1, (3, 3, 2))])

bad(L, "execute-stream-none", TypeError, r"stream|incompatible", _execute, stream=None)
bad(L, "execute-inputs-not-list", TypeError, r"execute: inputs must be a list of Tensor", _execute, inputs=X)
bad(L, "execute-missing-input", ValueError, r"execute: expected 2 input tensors, got 1",
    lambda: _execute(inputs=[og.Tensor(_compiled()[2][0], og.Engine(), X)]))
bad(L, "execute-twice", ValueError, r"input tensor with id 0 is given twice",
    lambda: _execute(inputs=[og.Tensor(_compiled()[2][0], og.Engine(), X)] * 2))
bad(L, "execute-foreign-id", ValueError, r"input tensor with id 5 is not an input of this partition",
    lambda: _execute(inputs=[og.Tensor(_lt(5, (1, 4, 2)), og.Engine(), X),
                             og.Tensor(_compiled()[2][1], og.Engine(), W)]))
bad(L, "execute-dtype", ValueError, r"input tensor with id 0 has dtype f16, compiled for f32",
    lambda: _execute(inputs=[og.Tensor(_lt(0, (1, 4, 2), "f16"), og.Engine(), X.astype(np.float16)),
                             og.Tensor(_compiled()[2][1], og.Engine(), W)]))
bad(L, "execute-shape", ValueError, r"input tensor with id 0 .*(bytes|shape or strides)",
    lambda: _execute(inputs=[og.Tensor(_lt(0, (1, 2, 2)), og.Engine(), X[:, :2]),
                             og.Tensor(_compiled()[2][1], og.Engine(), W)]))
_RO = np.full((1, 6, 3), 7.0, np.float32)
_RO.flags.writeable = False
bad(L, "execute-read-only", ValueError, r"output tensor with id 2 is read-only",
    lambda: _execute(outputs=[og.Tensor(_compiled()[3], og.Engine(), _RO)]))
bad(L, "execute-shape-input-float", ValueError, r"shape input \(id 3\) must be a 1-D int32 tensor",
    lambda: _execute(kind="ConvTransposeBackwardWeights", inputs=[
        og.Tensor(lt, og.Engine(), a) for lt, a in zip(_compiled("ConvTransposeBackwardWeights")[2][:2], (X, DY))
    ] + [og.Tensor(_lt(3, (3,)), og.Engine(), np.array([3, 3, 2], np.float32))]))
bad(L, "execute-shape-input-negative", ValueError, r"weights_shape\[1\] must be >= 1, got -3",
    lambda: _execute(kind="ConvTransposeBackwardWeights", inputs=[
        og.Tensor(lt, og.Engine(), a) for lt, a in zip(_compiled("ConvTransposeBackwardWeights")[2][:2], (X, DY))
    ] + [og.Tensor(_lt(3, (3,), "s32"), og.Engine(), np.array([3, -3, 2], np.int32))]))

bad(L, "tensor-float64", TypeError, r"Tensor: array dtype float64 does not match the logical tensor's f32",
    _tensor, (2, 3), np.zeros((2, 3)))
bad(L, "tensor-int32-for-f32", TypeError, r"Tensor: array dtype int32 does not match the logical tensor's f32",
    _tensor, (2, 3), np.zeros((2, 3), np.int32))
bad(L, "tensor-big-endian", TypeError, r"Tensor: array dtype >f4 does not match",
    _tensor, (2, 3), np.zeros((2, 3), ">f4"))
bad(L, "tensor-f16-for-bf16", TypeError, r"Tensor: array dtype float16 does not match the logical tensor's bf16",
    _tensor, (2, 3), np.zeros((2, 3), np.float16), "bf16")
bad(L, "tensor-list", TypeError, r"array must be an array \(numpy.ndarray, .*\), got list", _tensor, (2,), [1.0, 2.0])
bad(L, "tensor-none", TypeError, r"array|incompatible", _tensor, (2,), None)
bad(L, "tensor-shape", ValueError, r"array shape \(3, 2\) differs from the logical tensor's \(2, 3\)",
    _tensor, (2, 3), np.zeros((3, 2), np.float32))
bad(L, "tensor-strides", ValueError, r"array strides .* do not match", _tensor, (2, 3),
    np.zeros((3, 2), np.float32).T)
bad(L, "tensor-negative-strides", ValueError, r"array strides .* do not match", _tensor, (2, 3),
    np.zeros((2, 3), np.float32)[::-1])
bad(L, "tensor-unknown-rank", ValueError, r"rank is unknown", _tensor, None, np.zeros(3, np.float32))
bad(L, "tensor-unknown-dim", ValueError, r"unknown dims", _tensor, (-1, 3), np.zeros((2, 3), np.float32))
bad(L, "tensor-engine-str", TypeError, r"engine|incompatible", og.Tensor, _lt(0, (2,)), "cpu",
    np.zeros(2, np.float32))


def _check(case):
    """Run one case; 'ok' or what went wrong."""
    arrays = [a for a in (*case.args, *case.kwargs.values()) if isinstance(a, np.ndarray)]
    # A huge (broadcast, read-only) input is compared by its one stored element.
    arrays = [a if a.nbytes < 2**24 else a[(0,) * a.ndim] for a in arrays]
    before = [a.tobytes() for a in arrays]
    try:
        with pytest.raises(case.exc, match=case.match):
            case.fn(*case.args, **case.kwargs)
    except BaseException as e:  # pytest.fail raises an OutcomeException (a BaseException)
        return f"{type(e).__name__}: {e}"
    changed = [i for i, (a, b) in enumerate(zip(arrays, before)) if a.tobytes() != b]
    return f"array arguments {changed} were modified" if changed else "ok"


def child(group):
    """Entry point of a child interpreter: the results of one group as JSON."""
    print(json.dumps({c.id: _check(c) for c in CASES if c.group == group}))


_results = {}


def _group_results(group):
    if group not in _results:
        try:
            out = run_python(f"import test_validation as t; t.child({group!r})", timeout=300)
            _results[group] = json.loads(out.strip().splitlines()[-1])
        except AssertionError as e:  # the child crashed: every case of the group fails
            _results[group] = e
    if isinstance(_results[group], AssertionError):
        raise _results[group]
    return _results[group]


def test_case_ids_are_unique():
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case):
    assert _group_results(case.group)[case.id] == "ok"


@pytest.mark.parametrize("op", OPS)
def test_base_problems_are_valid(op):
    """The cases above break exactly one rule of these problems."""
    fn, args, out_shape, _ = OPS[op]
    out = _sentinel(out_shape)
    assert fn(*args, out=out) is out and not np.any(out == 7.0)


# --- valid but unusual inputs ------------------------------------------------
LAYOUTS = {
    "fortran": lambda a: np.asfortranarray(a),
    "negative": lambda a: a[::-1, ::-1, ::-1].copy()[::-1, ::-1, ::-1],
    "stepped": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],
    # every other row of an odd number of rows (what x[:, :, ::2] of a torch tensor gives):
    # each channel's rows reach past the next channel's start, an order of strides
    # oneDNN's memory descriptors do not take (memory_desc_strides_check), so it is copied
    "interleaved": lambda a: np.ascontiguousarray(np.repeat(a, 2, axis=-2)[..., :-1, :])[..., ::2, :],
    "transposed-view": lambda a: np.ascontiguousarray(np.swapaxes(a, 0, -1)).swapaxes(0, -1),
    "broadcast": lambda a: np.broadcast_to(a[:1], a.shape) if a.shape[0] > 1 else np.asfortranarray(a),
}


def _problem(op, rng, dtype):
    """Arrays (NCX, rank 2, groups 2, stride 2) and keywords for `op`, and the terms bound."""
    kw = dict(strides=2, pads_begin=1, pads_end=0, groups=2, data_format="NCX")
    x = random(rng, (2, 4, 5, 4), dtype)
    w = random(rng, (4, 3, 3, 2), dtype)  # IOX: C_in 4, C_out/g 3
    kw_t = dict(kw, weights_format="IOX")
    dy = random(rng, og.output_shape("ConvTranspose", [x.shape, w.shape], **kw_t), dtype)
    if op == "ct":
        return og.conv_transpose, R.conv_transpose, (x, w), kw_t, 4 * 6
    if op == "ctbd":
        return og.conv_transpose_backward_data, R.conv_transpose_backward_data, (dy, w), kw_t, 3 * 6
    if op == "ctbw":
        return (og.conv_transpose_backward_weights, R.conv_transpose_backward_weights, (x, dy),
                dict(kw_t, weights_shape=w.shape), 2 * int(np.prod(dy.shape[2:])))
    if op == "legacy":
        kw_l = dict(kw, filter_format="OIX", filter_shape=(3, 4, 3, 2))
        ref = lambda a, b, **k: R.conv_transpose_backward_weights(   # noqa: E731
            a, b, w.shape, weights_format="IOX", **kw).transpose(1, 0, 2, 3)
        return og.conv_transpose_backprop_filters, ref, (x, dy), kw_l, 2 * int(np.prod(dy.shape[2:]))
    wc = random(rng, (6, 2, 3, 2), dtype)  # OIX: C_out 6, C_in/g 2
    dyc = random(rng, og.shapes.plan("Convolution", [(2, 4, 8, 7), wc.shape], weights_format="OIX",
                                     **kw).output_shape, dtype)
    return (og.convolution_backward_data, R.convolution_backward_data, (dyc, wc),
            dict(kw, weights_format="OIX", dst_shape=(2, 4, 8, 7)), 3 * 6)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", ["ct", "ctbd", "ctbw", "cbd", "legacy"])
def test_strided_inputs_give_the_reference(rng, op, layout):
    fn, ref, args, kw, terms = _problem(op, rng, "f32")
    views = tuple(LAYOUTS[layout](a) for a in args)
    assert any(not v.flags.c_contiguous for v in views)
    before = [v.copy() for v in views]
    got = fn(*views, **kw)
    assert_matches_reference(got, ref, tuple(np.ascontiguousarray(v) for v in views), kw, "f32", terms)
    for v, b in zip(views, before):
        np.testing.assert_array_equal(v, b)


@pytest.mark.parametrize("op", ["ct", "ctbd", "cbd", "legacy"])
def test_strided_out_is_written_in_place(rng, op):
    fn, ref, args, kw, terms = _problem(op, rng, "f32")
    shape = fn(*args, **kw).shape
    out = np.full(shape[::-1], np.nan, np.float32).T  # Fortran order
    assert fn(*args, out=out, **kw) is out
    assert_matches_reference(out, ref, args, kw, "f32", terms)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("op", ["ct", "ctbd", "ctbw", "cbd"])
def test_nan_and_inf_propagate(rng, op, dtype, value):
    """Non-finite inputs give non-finite outputs exactly where a non-finite
    input enters one of the output's products (NaN stays NaN), and no
    exception; the other outputs still match the reference.

    Where a non-finite value enters is found with the reference on indicators
    (1 at non-finite inputs, 0 elsewhere, against all-ones partners): padding
    contributes no product, as in oneDNN's kernels. (Running the reference on
    the non-finite inputs themselves would not do: it pads with zeros, and
    0 * inf is NaN where oneDNN has no product at all.)
    """
    fn, ref, args, kw, terms = _problem(op, rng, dtype)
    args = tuple(a.copy() for a in args)
    args[0][0, 1, 2, 1] = value
    args[1].flat[3] = value
    got = fn(*args, **kw).astype(np.float64)
    bad = [~np.isfinite(a.astype(np.float64)) for a in args]
    ones = [np.ones(a.shape) for a in args]
    reached = (ref(bad[0].astype(np.float64), ones[1], **kw) + ref(ones[0], bad[1].astype(np.float64), **kw)) > 0
    assert reached.any() and not reached.all()
    np.testing.assert_array_equal(~np.isfinite(got), reached)
    if np.isnan(value):
        assert np.isnan(got[reached]).all()
    # Elsewhere: the problem with the non-finite inputs set to 0, same tolerance.
    clean = tuple(np.where(b, 0, a).astype(a.dtype) for a, b in zip(args, bad))
    with np.errstate(invalid="ignore"):
        patched = np.where(reached, ref(*clean, **kw), got).astype(args[0].dtype)
    assert_matches_reference(patched, ref, clean, kw, dtype, terms)


def test_lists_are_refused_with_the_reason():
    with pytest.raises(TypeError, match=r"src must be an array"):
        og.conv_transpose(X.tolist(), W)

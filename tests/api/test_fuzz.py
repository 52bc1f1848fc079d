"""Property-based tests: whole problems drawn by Hypothesis.

Valid problems (any op including the legacy name, rank 1-3, every attribute,
negative pads included, dtype, data layout, weights format, memory layout of
the inputs, the shape argument as a tuple or an int32 array) must match the
reference with the tolerance of conftest.assert_matches_reference, on whatever
CPU runs the suite: a valid problem never raises UnsupportedError. Invalid problems (a valid one with one rule broken) must
raise the documented exception, naming the argument.

Problems stay small (at most 2 x 6 channels, spatial sizes <= 5), so an
example costs milliseconds. The example count comes from the Hypothesis
profile (tests/conftest.py): "ci" by default, HYPOTHESIS_PROFILE=long for more.
"""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import assume, given, note, strategies as st  # noqa: E402

import onednn_graph as og  # noqa: E402
from onednn_graph import reference as R, shapes
from onednn_graph._impl import attrs as _attrs  # noqa: E402
from helpers import NUMPY, assert_matches_reference  # noqa: E402

OPS = ("ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
       "ConvolutionBackwardData", "ConvTransposeBackpropFilters")
CALL = {"ConvTranspose": og.conv_transpose,
        "ConvTransposeBackwardData": og.conv_transpose_backward_data,
        "ConvTransposeBackwardWeights": og.conv_transpose_backward_weights,
        "ConvolutionBackwardData": og.convolution_backward_data,
        "ConvTransposeBackpropFilters": og.conv_transpose_backprop_filters}
REF = {"ConvTranspose": R.conv_transpose,
       "ConvTransposeBackwardData": R.conv_transpose_backward_data,
       "ConvTransposeBackwardWeights": R.conv_transpose_backward_weights,
       "ConvolutionBackwardData": R.convolution_backward_data,
       "ConvTransposeBackpropFilters": R.conv_transpose_backprop_filters}
LAYOUTS = {
    "C": lambda a: a,
    "F": np.asfortranarray,
    "reversed": lambda a: np.flip(np.flip(a).copy()),
    "stepped": lambda a: np.repeat(a, 2, axis=0)[::2],
}


class Problem:
    """One call: the function's args and keywords, and what the reference needs."""

    def __init__(self, op, args, kw, ref_args, ref_kw, terms, dtype, plan):
        self.op, self.args, self.kw = op, args, kw
        self.ref_args, self.ref_kw, self.terms, self.dtype, self.plan = ref_args, ref_kw, terms, dtype, plan

    def __repr__(self):
        shapes_ = [getattr(a, "shape", a) for a in self.args]
        return f"Problem({self.op}, {shapes_}, {self.kw}, {self.dtype})"


@st.composite
def problems(draw):
    op = draw(st.sampled_from(OPS))
    rank = draw(st.integers(1, 3))
    dtype = draw(st.sampled_from(["f32", "bf16", "f16"]))
    groups = draw(st.integers(1, 3))
    ci, co = draw(st.integers(1, 2)) * groups, draw(st.integers(1, 2)) * groups
    # Pads may be negative (positions outside every kernel window, before or after
    # the full output): the JAX and ONNX conventions reach them.
    per_axis = st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 2),
                         st.integers(-2, 2), st.integers(-2, 2), st.integers(0, 2), st.integers(1, 5))
    axes = draw(st.lists(per_axis, min_size=rank, max_size=rank))
    kernel, strides, dilations, pb, pe, op_pad, spatial = (tuple(v) for v in zip(*axes))
    auto_pad = draw(st.sampled_from(["none", "none", "same_upper", "SAME_LOWER", "valid"]))
    data_format = draw(st.sampled_from(["NXC", "NCX"]))
    family = "conv" if op == "ConvolutionBackwardData" else "transpose"
    weights_format = draw(st.sampled_from(["XIO", "OIX"] if family == "conv" else ["XOI", "IOX"]))
    batch = draw(st.integers(1, 2))
    # An int for every axis, or a list: both spellings of the functional API.
    spell = draw(st.booleans())
    kw = dict(strides=strides, dilations=dilations, pads_begin=pb, pads_end=pe,
              output_padding=op_pad, auto_pad=auto_pad, groups=groups, data_format=data_format)
    if spell:
        kw = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kw.items()}
    np_dtype = NUMPY[dtype]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def arr(shape):
        return rng.uniform(-1, 1, shape).astype(np_dtype)

    layout = draw(st.sampled_from(list(LAYOUTS)))
    shape_as_array = draw(st.booleans())

    def shape_arg(s):
        return np.array(s, np.int32) if shape_as_array else tuple(s)

    x_shape = shapes.data_shape_for(data_format, batch, ci, spatial)
    ref_shape = {}  # the shape argument, by keyword, for the reference
    try:
        if family == "conv":
            a = _attrs.normalize(op, rank, **dict(kw, weights_format=weights_format))
            w = arr(shapes.weights_shape_for(a, ci, co, kernel))
            fwd = {k: v for k, v in kw.items() if k != "output_padding"}
            dy = arr(shapes.plan("Convolution", [x_shape, w.shape],
                                 **dict(fwd, weights_format=weights_format)).output_shape)
            args, ref_args, ref_shape = (dy, w, shape_arg(x_shape)), (dy, w), {"dst_shape": x_shape}
            terms = co // groups * int(np.prod(kernel))
            kw["weights_format"] = weights_format
        else:
            a = _attrs.normalize("ConvTranspose", rank, **dict(kw, weights_format=weights_format))
            w = arr(shapes.weights_shape_for(a, ci, co, kernel))
            x = arr(x_shape)
            y_shape = shapes.output_shape("ConvTranspose", [x_shape, w.shape],
                                          **dict(kw, weights_format=weights_format))
            if op == "ConvTranspose":
                bias = arr((co,)) if draw(st.booleans()) else None
                args = (x, w) if bias is None else (x, w, bias)
                ref_args = args
                terms = ci // groups * int(np.prod(kernel)) + 1
                kw["weights_format"] = weights_format
            elif op == "ConvTransposeBackwardData":
                dy = arr(y_shape)
                args = ref_args = (dy, w)
                terms = co // groups * int(np.prod(kernel))
                kw["weights_format"] = weights_format
            else:
                dy = arr(y_shape)
                terms = batch * int(np.prod(shapes.data_spatial(data_format, y_shape)))
                if op == "ConvTransposeBackwardWeights":
                    args, ref_args = (x, dy, shape_arg(w.shape)), (x, dy)
                    ref_shape = {"weights_shape": w.shape}
                    kw["weights_format"] = weights_format
                else:
                    legacy = {"IOX": "OIX", "XOI": "XIO"}[weights_format]
                    perm = shapes.format_permutation(weights_format, legacy, w.ndim)
                    fs = tuple(w.shape[p] for p in perm)
                    args, ref_args, ref_shape = (x, dy, shape_arg(fs)), (x, dy), {"filter_shape": fs}
                    kw["filter_format"] = legacy
    except ValueError:
        assume(False)  # the drawn geometry has no valid output (an empty axis)
    args = tuple(LAYOUTS[layout](v) if isinstance(v, np.ndarray) and v.dtype != np.int32 else v
                 for v in args)
    canonical = "ConvTransposeBackwardWeights" if op == "ConvTransposeBackpropFilters" else op
    plan_kw = dict(kw)
    if op == "ConvTransposeBackpropFilters":
        plan_kw.pop("filter_format")
        plan_kw.update(weights_format=weights_format, weights_shape=w.shape)
    elif op == "ConvTransposeBackwardWeights":
        plan_kw["weights_shape"] = w.shape
    elif op == "ConvolutionBackwardData":
        plan_kw["dst_shape"] = x_shape
    plan = shapes.plan(canonical, [v.shape for v in ref_args], **plan_kw)
    return Problem(op, args, kw, ref_args, dict(kw, **ref_shape), terms, dtype, plan)


@given(problems())
def test_valid_problems_match_the_reference(p):
    note(repr(p))
    got = CALL[p.op](*p.args, **p.kw)  # a valid problem has an answer: never UnsupportedError
    assert got.dtype == p.args[0].dtype
    assert_matches_reference(got, REF[p.op], p.ref_args, p.ref_kw, p.dtype, p.terms)


# One rule broken on purpose: (how, expected exception, message pattern).
BREAKS = [
    ("strides", lambda p: dict(p.kw, strides=0), ValueError, r"strides must be >= 1"),
    ("dilations", lambda p: dict(p.kw, dilations=-1), ValueError, r"dilations must be >= 1"),
    ("pads_begin", lambda p: dict(p.kw, pads_begin=2**63), ValueError, r"pads_begin must be < 2\*\*63"),
    ("output_padding", lambda p: dict(p.kw, output_padding=[-1]), ValueError, r"output_padding"),
    ("strides-length", lambda p: dict(p.kw, strides=[1] * (p.plan.attrs.spatial_rank + 1)), ValueError,
     r"strides must have \d entries"),
    ("groups-bool", lambda p: dict(p.kw, groups=True), TypeError, r"groups must be an int, got bool"),
    ("groups-float", lambda p: dict(p.kw, groups=1.0), TypeError, r"groups must be an int, got float"),
    ("auto_pad", lambda p: dict(p.kw, auto_pad="same"), ValueError, r"auto_pad must be one of"),
    ("data_format", lambda p: dict(p.kw, data_format="NHCW"), ValueError, r"data_format must be one of"),
    ("format", lambda p: dict(p.kw, **{"filter_format" if "filter_format" in p.kw else "weights_format": "OHIW"}),
     ValueError, r"(weights|filter)_format must be one of"),
    ("unknown-keyword", lambda p: dict(p.kw, padding=1), TypeError, r"unexpected keyword argument 'padding'"),
]
ARG_BREAKS = [
    ("float64", lambda a: a.astype(np.float64), TypeError, r"unsupported dtype float64"),
    ("int64", lambda a: a.astype(np.int64), TypeError, r"unsupported dtype int64"),
    ("big-endian", lambda a: a.astype(a.dtype.newbyteorder(">")) if a.dtype.itemsize > 1 else a,
     TypeError, r"unsupported dtype >f"),
    ("rank", lambda a: a.reshape(a.shape[0], -1), ValueError, r"must have rank|has rank \d+ but"),
    ("list", lambda a: a.tolist(), TypeError, r"must be an array"),
    ("None", lambda a: None, TypeError, r"must be an array"),
]


@given(problems(), st.sampled_from(BREAKS))
def test_invalid_attributes_raise_the_documented_error(p, brk):
    name, change, exc, match = brk
    note(f"{p!r} broken: {name}")
    with pytest.raises(exc, match=match):
        CALL[p.op](*p.args, **change(p))


@given(problems(), st.sampled_from(ARG_BREAKS), st.integers(0, 1))
def test_invalid_arrays_raise_the_documented_error(p, brk, which):
    name, change, exc, match = brk
    assume(not (name == "big-endian" and p.dtype == "bf16"))  # bf16 has no byte-swapped dtype
    arrays = [i for i, a in enumerate(p.args) if isinstance(a, np.ndarray) and a.dtype != np.int32]
    i = arrays[which % len(arrays)]
    args = list(p.args)
    args[i] = change(np.asarray(args[i]))
    note(f"{p!r} broken: {name} on argument {i}")
    with pytest.raises(exc, match=match):
        CALL[p.op](*args, **p.kw)


@given(problems(), st.sampled_from(["shape", "dtype", "read-only"]))
def test_bad_out_raises_and_keeps_its_contents(p, how):
    try:
        shape = CALL[p.op](*p.args, **p.kw).shape
    except og.UnsupportedError:
        assume(False)
    dtype = np.dtype(NUMPY[p.dtype])
    out = {"shape": lambda: np.full(shape + (1,), 7, dtype),
           "dtype": lambda: np.full(shape, 7, np.float64),
           "read-only": lambda: np.full(shape, 7, dtype)}[how]()
    if how == "read-only":
        out.flags.writeable = False
    exc, match = {"shape": (ValueError, r"out has shape"), "dtype": (TypeError, r"out has dtype"),
                  "read-only": (ValueError, r"out is read-only")}[how]
    with pytest.raises(exc, match=match):
        CALL[p.op](*p.args, out=out, **p.kw)
    assert np.all(out == 7)


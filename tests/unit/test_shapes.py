"""Geometry of the convolution-family ops (onednn_graph.shapes), worked by hand.

Each expected number is derived in a comment from the oneDNN v3.2 rule it
pins (src/graph/interface/shape_infer.cpp).
"""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# conftest.py imports the built package, so the modules load normally.
from onednn_graph import shapes


normalize = shapes._attrs.normalize

CT, CTBD, CTBW, CBD = shapes.KINDS


# --------------------------------------------------------------------------
# per-axis formulas
# --------------------------------------------------------------------------


def test_conv_transpose_out_size_by_hand():
    # X=3, K=2, s=2, d=2: ek = (2-1)*2+1 = 3, s*(X-1) = 4, so the full length
    # is 4+3 = 7. pads 1+2 leave 4, and output_padding 1 gives 5.
    assert shapes.conv_transpose_out_size(3, 2, 2, 2, 0, 0) == 7
    assert shapes.conv_transpose_out_size(3, 2, 2, 2, 1, 2) == 4
    assert shapes.conv_transpose_out_size(3, 2, 2, 2, 1, 2, 1) == 5


def test_conv_out_size_by_hand():
    # X=7, K=3, s=2, d=2: ek = 5; (7 + 1 + 0 - 5) // 2 + 1 = 3 // 2 + 1 = 2
    assert shapes.conv_out_size(7, 3, 2, 2, 1, 0) == 2
    # X=8, K=3, s=2, d=1, pads 1/1: (8 + 2 - 3) // 2 + 1 = 7 // 2 + 1 = 4 (floor)
    assert shapes.conv_out_size(8, 3, 2, 1, 1, 1) == 4
    assert shapes.effective_kernel(4, 3) == 10  # (4-1)*3 + 1


# --------------------------------------------------------------------------
# auto_pad (infer_auto_pad), per op kind
# --------------------------------------------------------------------------


def _pads(kind, in_size, k, s=1, d=1, auto_pad="same_upper", native=False, **kw):
    a = normalize(kind, 1, strides=s, dilations=d, auto_pad=auto_pad, **kw)
    (pb,), (pe,) = shapes.resolve_pads(a, (in_size,), (k,), native=native)
    return pb, pe


def test_conv_transpose_same_padding_uses_kernel_minus_stride():
    # ConvTranspose passes is_deconv=true: total = max(0, ek - s), whatever
    # the input size. K=3, s=2: total 1. The odd unit goes last for upper,
    # first for lower.
    for x in (3, 4, 5):
        assert _pads(CT, x, 3, s=2) == (0, 1)
        assert _pads(CT, x, 3, s=2, auto_pad="same_lower") == (1, 0)
    # K=3, d=2: ek=5, s=2 -> total 3 -> upper (1, 2), lower (2, 1)
    assert _pads(CT, 4, 3, s=2, d=2) == (1, 2)
    assert _pads(CT, 4, 3, s=2, d=2, auto_pad="same_lower") == (2, 1)
    # ek (1) < s (3): the total is clamped to 0
    assert _pads(CT, 4, 1, s=3) == (0, 0)


@pytest.mark.parametrize("kind", ["ConvTransposeBackwardData", "ConvTransposeBackwardWeights"])
def test_backward_transpose_ops_resolve_same_as_conv_transpose(kind):
    # 3.2 resolves SAME for these two with the convolution rule, which makes
    # them disagree with their own ConvTranspose; the package resolves them
    # as ConvTranspose does (total = max(0, ek - s)) so the three stay adjoint.
    assert _pads(kind, 3, 3, s=2) == _pads(CT, 3, 3, s=2) == (0, 1)
    # ek = 5, s = 2: total 3 -> upper (1, 2), lower (2, 1), whatever the input size
    for size in (7, 8):
        assert _pads(kind, size, 3, s=2, d=2) == (1, 2)
        assert _pads(kind, size, 3, s=2, d=2, auto_pad="same_lower") == (2, 1)


@pytest.mark.parametrize("kind", [CTBD, CTBW])
def test_native_rule_of_the_backward_transpose_ops(kind):
    # oneDNN 3.2 itself (native=True) pads these with is_deconv=false on
    # diff_dst's size: total = max(0, ek - (in % s or s)).
    # in=3, K=3, s=2: 3 % 2 = 1 -> total 2 -> (1, 1); in=8, ek=5: 8 % 2 = 0 -> total 3
    assert _pads(kind, 3, 3, s=2, native=True) == (1, 1)
    assert _pads(kind, 8, 3, s=2, d=2, native=True) == (1, 2)
    assert _pads(kind, 7, 3, s=2, d=2, native=True) == (2, 2)  # 7 % 2 = 1 -> 5 - 1
    # ConvTranspose's own rule is the same either way
    assert _pads(CT, 3, 3, s=2, native=True) == (0, 1)


def test_convolution_backward_data_uses_the_convolution_rule():
    # is_deconv=false: total = max(0, ek - (in % s or s)), in = dst_shape's size.
    assert _pads("ConvolutionBackwardData", 3, 3, s=2) == (1, 1)   # 3 % 2 = 1 -> total 2
    assert _pads("ConvolutionBackwardData", 8, 3, s=2, d=2) == (1, 2)  # 8 % 2 = 0 -> 5 - 2
    assert _pads("ConvolutionBackwardData", 7, 3, s=2, d=2) == (2, 2)  # 7 % 2 = 1 -> 5 - 1


@pytest.mark.parametrize("kind", shapes.KINDS)
def test_valid_and_none(kind):
    # valid: zero pads, whatever pads_begin/pads_end say. none: the attributes.
    assert _pads(kind, 5, 3, s=2, auto_pad="valid", pads_begin=2, pads_end=1) == (0, 0)
    assert _pads(kind, 5, 3, s=2, auto_pad="none", pads_begin=2, pads_end=1) == (2, 1)
    # same_*: the attribute pads are ignored as well
    assert _pads(kind, 5, 1, auto_pad="same_upper", pads_begin=2, pads_end=1) == (0, 0)


def test_resolve_pads_is_per_axis():
    a = normalize(CTBD, 2, strides=(1, 2), auto_pad="same_lower")
    # axis 0: K 4, s 1: total 3 -> (2, 1); axis 1: K 3, s 2: total 1 -> (1, 0)
    assert shapes.resolve_pads(a, (6, 5), (4, 3)) == ((2, 1), (1, 0))


# --------------------------------------------------------------------------
# layouts
# --------------------------------------------------------------------------


def test_format_permutation():
    # XOI (K0, K1, O, I) -> IOX (I, O, K0, K1): take axes 3, 2, 0, 1
    assert shapes.format_permutation("XOI", "IOX", 4) == (3, 2, 0, 1)
    # NXC (N, X0, X1, X2, C) -> NCX: (0, 4, 1, 2, 3)
    assert shapes.format_permutation("NXC", "NCX", 5) == (0, 4, 1, 2, 3)
    assert shapes.format_permutation("OIX", "OIX", 3) == (0, 1, 2)
    with pytest.raises(ValueError):
        shapes.format_permutation("NCX", "OIX", 3)


def test_data_helpers():
    assert shapes.data_spatial("NXC", (2, 5, 6, 3)) == (5, 6)
    assert shapes.data_spatial("NCX", (2, 3, 5, 6)) == (5, 6)
    assert shapes.data_channels("NXC", (2, 5, 6, 3)) == 3
    assert shapes.data_channels("NCX", (2, 3, 5, 6)) == 3
    assert shapes.data_shape_for("NCX", 2, 3, (5, 6)) == (2, 3, 5, 6)


@pytest.mark.parametrize(
    "kind, fmt, shape, channels",
    [
        # ConvTranspose family, groups 2: I = C_in, O = C_out / g.
        (CT, "IOX", (4, 3, 5, 7), (4, 6)),
        (CT, "XOI", (5, 7, 3, 4), (4, 6)),
        (CTBW, "XOI", (5, 3, 4), (4, 6)),
        # convolution family, groups 2: O = C_out, I = C_in / g.
        (CBD, "OIX", (6, 2, 5), (4, 6)),
        (CBD, "XIO", (5, 7, 2, 6), (4, 6)),
    ],
)
def test_weights_channels_and_roundtrip(kind, fmt, shape, channels):
    a = normalize(kind, len(shape) - 2, groups=2, weights_format=fmt)
    assert shapes.weights_channels(a, shape) == channels
    kernel = shapes.weights_spatial(a, shape)
    assert kernel == ((5, 7) if len(shape) == 4 else (5,))
    assert shapes.weights_shape_for(a, *channels, kernel) == shape


def test_weights_shape_for_rejects_indivisible_channels():
    a = normalize(CT, 1, groups=2, weights_format="IOX")
    with pytest.raises(ValueError, match=r"groups \(2\) must divide c_out \(3\)"):
        shapes.weights_shape_for(a, 4, 3, (3,))


def test_from_legacy_filter_swaps_the_channel_axes():
    # legacy OIX = (C_out/g, C_in, K) -> IOX = (C_in, C_out/g, K)
    assert shapes.from_legacy_filter("OIX", (3, 4, 5)) == ("IOX", (4, 3, 5))
    # legacy XIO = (K0, K1, C_in, C_out/g) -> XOI = (K0, K1, C_out/g, C_in)
    assert shapes.from_legacy_filter("XIO", (5, 6, 4, 3)) == ("XOI", (5, 6, 3, 4))
    assert shapes.from_legacy_filter("XIO") == ("XOI", None)
    with pytest.raises(ValueError, match="filter_format"):
        shapes.from_legacy_filter("IOX")


# --------------------------------------------------------------------------
# output_shape, worked by hand
# --------------------------------------------------------------------------


def test_conv_transpose_output_shape():
    # NXC src (N=2, X=3, C=4); XOI weights (K=2, C_out/g=3, C_in=4), g=2:
    # C_out = 6. Spatial: s=2, d=2, pads 1/2, op 1 -> 2*2 + 3 - 3 + 1 = 5.
    kw = dict(strides=2, dilations=2, pads_begin=1, pads_end=2, output_padding=1, groups=2)
    assert shapes.output_shape(CT, [(2, 3, 4), (2, 3, 4)], **kw) == (2, 5, 6)
    assert shapes.output_shape(CT, [(2, 3, 4), (2, 3, 4), (6,)], **kw) == (2, 5, 6)
    # The same op in NCX/IOX
    assert shapes.output_shape(CT, [(2, 4, 3), (4, 3, 2)], data_format="NCX",
                               weights_format="IOX", **kw) == (2, 6, 5)


def test_conv_transpose_output_shape_2d_same_upper():
    # X=(4, 5), K=(3, 2), s=(2, 3), same_upper: total = max(0, ek - s) = (1, 0)
    # -> out = s*(X-1) + ek - total = (6+3-1, 12+2-0) = (8, 14)
    shape = shapes.output_shape(CT, [(1, 2, 4, 5), (2, 1, 3, 2)], strides=(2, 3),
                                auto_pad="same_upper", data_format="NCX",
                                weights_format="IOX")
    assert shape == (1, 1, 8, 14)


def test_conv_transpose_backward_data_output_shape():
    # diff_dst NCX (1, 6, 7), IOX weights (4, 3, 3), g=2: diff_dst C = 3*2 = 6
    # is right; diff_src C = I = 4. Spatial: (7 + 1 + 1 - 3) // 2 + 1 = 4.
    kw = dict(strides=2, pads_begin=1, pads_end=1, groups=2, data_format="NCX",
              weights_format="IOX")
    assert shapes.output_shape(CTBD, [(1, 6, 7), (4, 3, 3)], **kw) == (1, 4, 4)
    # An even diff_dst length 8 gives floor((8 + 2 - 3) / 2) + 1 = 4 as well:
    # several ConvTranspose geometries share one diff_src size.
    assert shapes.output_shape(CTBD, [(1, 6, 8), (4, 3, 3)], **kw) == (1, 4, 4)
    # same_lower, Y=7, K=3, d=2 (ek=5), s=2: total 5 - 2 = 3 -> (2, 1):
    # (7 + 3 - 5) // 2 + 1 = 3
    assert shapes.output_shape(CTBD, [(1, 6, 7), (4, 3, 3)], strides=2, dilations=2,
                               auto_pad="same_lower", groups=2, data_format="NCX",
                               weights_format="IOX") == (1, 4, 3)
    # output_padding is the forward ConvTranspose's, even when >= stride:
    # X=3, K=3, s=2, pads 1/1, op=2 gives Y = 4 + 3 - 2 + 2 = 7, and back
    # (7 + 1 + 1 - 2 - 3) // 2 + 1 = 3 (without op it would be 4, above)
    assert shapes.output_shape(CTBD, [(1, 6, 7), (4, 3, 3)], output_padding=2,
                               **kw) == (1, 4, 3)


def test_same_padding_with_output_padding_round_trips():
    # ConvTranspose X=3, K=3, s=2, same_upper, op=1: total 1 -> Y = 4 + 3 - 1 + 1 = 7.
    # ConvTransposeBackwardData pads as ConvTranspose does (total 1, (0, 1)) and
    # folds output_padding: (7 + 0 + 1 - 1 - 3) // 2 + 1 = 3, the src size again.
    # (3.2's own rule would pad (1, 1) and give 4.)
    kw = dict(strides=2, auto_pad="same_upper", data_format="NCX", weights_format="IOX")
    y = shapes.output_shape(CT, [(1, 1, 3), (1, 1, 3)], output_padding=1, **kw)
    assert y == (1, 1, 7)
    assert shapes.output_shape(CTBD, [y, (1, 1, 3)], output_padding=1, **kw) == (1, 1, 3)
    # Without output_padding they agree: Y = 6 -> total 1 -> (6 + 1 - 3) // 2 + 1 = 3
    y = shapes.output_shape(CT, [(1, 1, 3), (1, 1, 3)], **kw)
    assert shapes.output_shape(CTBD, [y, (1, 1, 3)], **kw) == (1, 1, 3)


def test_conv_transpose_backward_weights_output_shape():
    # src (1, 3, 4) NXC: X=3, C_in=4. diff_dst (1, 7, 6): Y=7, C_out=6. g=2.
    # XOI (3, 3, 4): K=3, O = 6/2, I = 4. Geometry: (7 - 3) // 2 + 1 = 3 = X.
    shape = shapes.output_shape(CTBW, [(1, 3, 4), (1, 7, 6)], weights_shape=(3, 3, 4),
                                strides=2, groups=2)
    assert shape == (3, 3, 4)
    # K=2 fits too, as an implicit output padding: (7 - 2) // 2 + 1 = 3
    assert shapes.output_shape(CTBW, [(1, 3, 4), (1, 7, 6)], weights_shape=(2, 3, 4),
                               strides=2, groups=2) == (2, 3, 4)
    # K=5 does not: (7 - 5) // 2 + 1 = 2 != 3
    with pytest.raises(ValueError, match="do not fit kernel 5"):
        shapes.output_shape(CTBW, [(1, 3, 4), (1, 7, 6)], weights_shape=(5, 3, 4),
                            strides=2, groups=2)
    # pads 1/1, K=3: (7 + 2 - 3) // 2 + 1 = 4 != 3, but with the forward's
    # output_padding 2 (Y = 4 + 3 - 2 + 2 = 7): (7 + 2 - 2 - 3) // 2 + 1 = 3
    kw = dict(weights_shape=(3, 3, 4), strides=2, pads_begin=1, pads_end=1, groups=2)
    with pytest.raises(ValueError, match="do not fit kernel 3"):
        shapes.output_shape(CTBW, [(1, 3, 4), (1, 7, 6)], **kw)
    assert shapes.output_shape(CTBW, [(1, 3, 4), (1, 7, 6)], output_padding=2,
                               **kw) == (3, 3, 4)


def test_convolution_backward_data_output_shape():
    # diff_dst NXC (2, 4, 6); XIO weights (3, 2, 6), g=2 -> C_in = 4.
    # dst_shape (2, 9, 4): (9 - 3) // 2 + 1 = 4 = Y.
    kw = dict(strides=2, groups=2)
    assert shapes.output_shape(CBD, [(2, 4, 6), (3, 2, 6)], dst_shape=(2, 9, 4), **kw) == (2, 9, 4)
    assert shapes.output_shape(CBD, [(2, 4, 6), (3, 2, 6)], dst_shape=(2, 10, 4), **kw) == (2, 10, 4)
    with pytest.raises(ValueError, match="dst_shape size 11"):
        # (11 - 3) // 2 + 1 = 5 != 4
        shapes.output_shape(CBD, [(2, 4, 6), (3, 2, 6)], dst_shape=(2, 11, 4), **kw)


def test_convolution_backward_data_auto_pad_uses_dst_shape():
    # dst X=5, K=3, s=2, same_upper: 5 % 2 = 1 -> total 2 -> pads (1, 1):
    # (5 + 2 - 3) // 2 + 1 = 3 = Y
    p = shapes.plan(CBD, [(1, 1, 3), (1, 1, 3)], dst_shape=(1, 1, 5), strides=2,
                    auto_pad="same_upper", data_format="NCX", weights_format="OIX")
    assert (p.pads_begin, p.pads_end) == ((1,), (1,))


def test_legacy_kind_output_shape():
    # legacy OIX (C_out/g, C_in, K) = (3, 4, 3) for src C=4, diff_dst C=6, g=2
    shape = shapes.output_shape(shapes.LEGACY_KIND, [(1, 4, 3), (1, 6, 7)],
                                filter_shape=(3, 4, 3), filter_format="OIX", strides=2,
                                groups=2, data_format="NCX")
    assert shape == (3, 4, 3)
    # the current IOX order (4, 3, 3) read as legacy OIX would mean C_in=3: rejected
    with pytest.raises(ValueError, match="I axis"):
        shapes.output_shape(shapes.LEGACY_KIND, [(1, 4, 3), (1, 6, 7)],
                            filter_shape=(4, 3, 3), filter_format="OIX", strides=2,
                            groups=2, data_format="NCX")


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

NCX_IOX = dict(data_format="NCX", weights_format="IOX")


@pytest.mark.parametrize(
    "kind, inputs, kw, message",
    [
        (CT, [(1, 4, 3), (3, 2, 2)], NCX_IOX, r"I axis \(3\) must equal the channels of src \(4\)"),
        (CT, [(1, 3, 3), (3, 2, 2)], dict(groups=2, **NCX_IOX), r"groups \(2\) must divide the channels of src \(3\)"),
        (CT, [(1, 4, 3), (4, 2, 2), (3,)], dict(groups=2, **NCX_IOX), r"bias \(3,\) must have shape \(4,\)"),
        (CT, [(1, 4, 3), (4, 2)], NCX_IOX, "must have rank 3"),
        (CT, [(1, 4), (4, 2)], NCX_IOX, "rank >= 3"),
        (CT, [(1, 4, 3)], NCX_IOX, "takes inputs"),
        (CT, [(1, 4, 1), (4, 2, 2)], dict(pads_begin=2, pads_end=1, **NCX_IOX), "empty"),
        (CTBD, [(1, 5, 6), (4, 2, 2)], dict(groups=2, **NCX_IOX), r"O axis \(2\) times groups \(2\) must equal the channels of diff_dst \(5\)"),
        (CTBD, [(1, 4, 6), (3, 2, 2)], dict(groups=2, **NCX_IOX), r"groups \(2\) must divide the weights' I axis"),
        (CTBW, [(1, 4, 3), (1, 6, 7)], dict(groups=2, **NCX_IOX), "needs weights_shape="),
        (CTBW, [(1, 4, 3), (2, 6, 7)], dict(groups=2, weights_shape=(4, 3, 3), **NCX_IOX), "batch size"),
        (CTBW, [(1, 4, 3), (1, 6, 7)], dict(groups=2, weights_shape=(4, 6, 3), **NCX_IOX), r"O axis \(6\) times groups"),
        (CTBW, [(1, 4, 3), (1, 5, 7)], dict(groups=2, weights_shape=(4, 3, 3), **NCX_IOX), "must divide the channels of diff_dst"),
        (CBD, [(1, 6, 4), (6, 2, 3)], dict(groups=2, data_format="NCX", weights_format="OIX"), "needs dst_shape="),
        (CBD, [(1, 6, 4), (5, 2, 3)], dict(groups=2, dst_shape=(1, 4, 6), data_format="NCX", weights_format="OIX"), r"O axis \(5\) must equal the channels of diff_dst \(6\)"),
        (CBD, [(1, 6, 4), (6, 2, 3)], dict(groups=2, dst_shape=(1, 5, 6), data_format="NCX", weights_format="OIX"), r"I axis \(2\) times groups \(2\) must equal the channels of dst_shape \(5\)"),
        (CBD, [(1, 6, 4), (6, 2, 3)], dict(groups=2, dst_shape=(1, 4, 6, 1), data_format="NCX", weights_format="OIX"), "must have rank 3"),
        ("Deconvolution", [(1, 1, 1), (1, 1, 1)], {}, "unknown op kind"),
    ],
)
def test_invalid_calls_raise_value_error(kind, inputs, kw, message):
    with pytest.raises(ValueError, match=message):
        shapes.output_shape(kind, inputs, **kw)


def test_the_published_iox_shape_is_rejected_with_groups():
    # The spec note says IOX is (C_in/g, C_out, K); with C_in=4, C_out=6, g=2
    # that is (2, 6, K). The library reads IOX as (C_in, C_out/g, K) = (4, 3, K).
    with pytest.raises(ValueError, match="I axis"):
        shapes.output_shape(CT, [(1, 4, 3), (2, 6, 2)], groups=2, **NCX_IOX)
    assert shapes.output_shape(CT, [(1, 4, 3), (4, 3, 2)], groups=2, **NCX_IOX) == (1, 6, 4)


def test_non_integer_shape_is_a_type_error():
    with pytest.raises(TypeError):
        shapes.output_shape(CT, [(1, 4, 3.5), (4, 3, 2)], **NCX_IOX)


def test_wrong_output_attribute_is_rejected():
    # dst_shape belongs to ConvolutionBackwardData only; _attrs.normalize rejects it
    with pytest.raises(TypeError):
        shapes.output_shape(CT, [(1, 4, 3), (4, 3, 2)], dst_shape=(1, 1, 1), **NCX_IOX)


# --------------------------------------------------------------------------
# inference of weights_shape and dst_shape
# --------------------------------------------------------------------------


def test_infer_weights_shape_unique():
    # X=3, Y=7, s=2, d=1: 7 = 2*2 + K -> K = 3. C_in=4, C_out=6, g=2 -> XOI (3, 3, 4)
    assert shapes.infer_weights_shape((1, 3, 4), (1, 7, 6), strides=2, groups=2) == (3, 3, 4)
    # d=2, pads 1/1: 7 = 4 + 2*(K-1) + 1 - 2 -> K = 3. IOX (4, 3, 3)
    assert shapes.infer_weights_shape((1, 4, 3), (1, 6, 7), strides=2, dilations=2,
                                      pads_begin=1, pads_end=1, groups=2,
                                      **NCX_IOX) == (4, 3, 3)


def test_infer_weights_shape_none_fits():
    # X=3, Y=8, s=2, d=2: 8 = 4 + 2*(K-1) + 1 has no integer K
    with pytest.raises(ValueError, match="no kernel size fits.*pass weights_shape="):
        shapes.infer_weights_shape((1, 3, 1), (1, 8, 1), strides=2, dilations=2)


def test_infer_weights_shape_same_padding_is_ambiguous():
    # same_upper, X=3, Y=6, s=2: the pads grow with K, so 6 = 2*3 for all K >= 2
    with pytest.raises(ValueError, match=r"ambiguous \(candidates: 2, 3, 4, .*pass weights_shape="):
        shapes.infer_weights_shape((1, 3, 1), (1, 6, 1), strides=2, auto_pad="same_upper")


def test_infer_dst_shape():
    # s=1: X = Y + ek - 1 - pads = 4 + 3 - 1 - 1 = 5, unique. OIX (6, 2, 3), g=2 -> C_in 4
    assert shapes.infer_dst_shape((1, 6, 4), (6, 2, 3), pads_begin=1, groups=2,
                                  data_format="NCX", weights_format="OIX") == (1, 4, 5)
    # s=2: floor((X - 3) / 2) + 1 = 4 holds for X = 9 and 10
    with pytest.raises(ValueError, match=r"ambiguous \(candidates: 9, 10\); pass dst_shape="):
        shapes.infer_dst_shape((1, 6, 4), (6, 2, 3), strides=2, groups=2,
                               data_format="NCX", weights_format="OIX")


# --------------------------------------------------------------------------
# properties over many geometries
# --------------------------------------------------------------------------


@st.composite
def _ct_geometry(draw):
    nsp = draw(st.integers(1, 3))
    g = draw(st.integers(1, 3))
    auto_pad = draw(st.sampled_from(["none", "valid", "same_upper", "same_lower"]))
    axes = []
    for _ in range(nsp):
        x, k, s, d = draw(st.integers(1, 5)), draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
        ek = (k - 1) * d + 1
        pb, pe = draw(st.integers(0, ek - 1)), draw(st.integers(0, ek - 1))
        op = draw(st.integers(0, s))  # op == s too: the package folds it into pads_end
        axes.append((x, k, s, d, pb, pe, op))
    x, k, s, d, pb, pe, op = zip(*axes)
    c_in, c_out = g * draw(st.integers(1, 2)), g * draw(st.integers(1, 2))
    kw = dict(strides=s, dilations=d, pads_begin=pb, pads_end=pe, output_padding=op,
              auto_pad=auto_pad, groups=g, data_format=draw(st.sampled_from(["NCX", "NXC"])),
              weights_format=draw(st.sampled_from(["IOX", "XOI"])))
    return x, k, c_in, c_out, kw


@settings(max_examples=100, deadline=None, derandomize=True)
@given(_ct_geometry())
def test_conv_transpose_geometry_round_trips(geometry):
    x, k, c_in, c_out, kw = geometry
    fmt = kw["data_format"]
    a = normalize(CT, len(x), **kw)
    src = shapes.data_shape_for(fmt, 2, c_in, x)
    w = shapes.weights_shape_for(a, c_in, c_out, k)
    try:
        dst = shapes.output_shape(CT, [src, w], **kw)
    except ValueError as exc:
        assert "empty" in str(exc)
        return
    assert shapes.data_channels(fmt, dst) == c_out
    # With the same attributes, ConvTransposeBackwardData recovers src's shape
    # and ConvTransposeBackwardWeights accepts the forward geometry
    assert shapes.output_shape(CTBD, [dst, w], **kw) == src
    assert shapes.output_shape(CTBW, [src, dst], weights_shape=w, **kw) == w
    # output_padding < stride only adds a remainder the floor drops, so
    # leaving it out changes nothing (3.2 rejects it on these two ops)
    if all(op < s for op, s in zip(kw["output_padding"], kw["strides"])):
        no_op = {key: v for key, v in kw.items() if key != "output_padding"}
        assert shapes.output_shape(CTBD, [dst, w], **no_op) == src
        assert shapes.output_shape(CTBW, [src, dst], weights_shape=w, **no_op) == w
    # Unless same_* padding cancels K, K is the unique solution
    if kw["auto_pad"] in ("none", "valid"):
        assert shapes.infer_weights_shape(src, dst, **kw) == w


@settings(max_examples=100, deadline=None, derandomize=True)
@given(_ct_geometry())
def test_convolution_backward_data_geometry(geometry):
    x, k, c_in, c_out, kw = geometry
    kw = dict(kw, weights_format={"IOX": "OIX", "XOI": "XIO"}[kw["weights_format"]])
    del kw["output_padding"]
    fmt = kw["data_format"]
    a = normalize(CBD, len(x), **kw)
    src = shapes.data_shape_for(fmt, 2, c_in, x)
    w = shapes.weights_shape_for(a, c_in, c_out, k)
    try:
        dst = shapes.plan("Convolution", [src, w], **kw).output_shape
    except ValueError as exc:
        assert "empty" in str(exc)
        return
    assert shapes.output_shape(CBD, [dst, w], dst_shape=src, **kw) == src
    if all(s == 1 for s in kw["strides"]):
        assert shapes.infer_dst_shape(dst, w, **kw) == src
    else:
        try:
            assert shapes.infer_dst_shape(dst, w, **kw) == src
        except ValueError as exc:  # ambiguous: the true size must be a candidate
            assert "ambiguous" in str(exc)


def test_convolution_backward_weights_plan():
    """The weights gradient of a convolution (what the package runs f32 NXC
    ConvTransposeBackwardWeights as): a convolution of src must give diff_dst."""
    kw = dict(strides=2, data_format="NCX", weights_format="OIX", groups=2)
    p = shapes.plan("ConvolutionBackwardWeights", [(1, 4, 7), (1, 6, 3)], weights_shape=(6, 2, 3), **kw)
    assert p.output_shape == (6, 2, 3) and p.kernel == (3,)
    with pytest.raises(ValueError, match=r"the O axis \(4\) must equal the channels of diff_dst"):
        shapes.plan("ConvolutionBackwardWeights", [(1, 4, 7), (1, 6, 3)], weights_shape=(4, 2, 3), **kw)
    with pytest.raises(ValueError, match=r"times groups \(2\) must equal the channels of src"):
        shapes.plan("ConvolutionBackwardWeights", [(1, 4, 7), (1, 6, 3)], weights_shape=(6, 1, 3), **kw)
    with pytest.raises(ValueError, match="src size 7 and diff_dst size 4 do not fit"):
        shapes.plan("ConvolutionBackwardWeights", [(1, 4, 7), (1, 6, 4)], weights_shape=(6, 2, 3), **kw)
    with pytest.raises(ValueError, match="needs weights_shape="):
        shapes.plan("ConvolutionBackwardWeights", [(1, 4, 7), (1, 6, 3)], **kw)

"""torch_like.conv_transpose*d against PyTorch itself (f32) and the reference (all dtypes).

Tolerance against PyTorch: both sides accumulate `terms` f32 products (in
different orders) and are each within terms * 2**-24 * sum|x_i w_i| of the
exact sum (the standard bound), so they differ by at most twice that.
sum|x_i w_i| is the reference applied to |inputs|.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import torch_like

from onednn_graph.tolerance import compare
from helpers import assert_matches_reference, random

torch = pytest.importorskip("torch")
F = torch.nn.functional
FUNCS = {1: (torch_like.conv_transpose1d, F.conv_transpose1d),
         2: (torch_like.conv_transpose2d, F.conv_transpose2d),
         3: (torch_like.conv_transpose3d, F.conv_transpose3d)}
NCX = dict(data_format="NCX", weights_format="IOX")


def assert_close_to_torch(got, expected, x, w, pads_kw, terms):
    mag = og.reference.conv_transpose(np.abs(x).astype(np.float64), np.abs(w).astype(np.float64),
                                      **pads_kw, **NCX)
    tol = 2 * terms * 2.0**-24 * mag + 1e-30
    assert got.shape == expected.shape
    err = np.abs(got.astype(np.float64) - expected)
    assert np.all(err <= tol), f"max error {err.max():.3g}"


# (spatial rank, stride, padding, output_padding, groups, dilation)
CASES = [
    (1, 1, 0, 0, 1, 1), (1, 2, 1, 1, 1, 1), (1, 3, 2, 0, 2, 1), (1, 2, 1, 2, 1, 3),
    (2, 1, 0, 0, 1, 1), (2, 2, 1, 1, 1, 1), (2, (2, 3), (1, 0), (0, 2), 2, 1),
    (2, 1, 1, 0, 1, 2), (2, 2, (0, 2), (1, 0), 1, (1, 2)),
    (3, 1, 0, 0, 1, 1), (3, 2, 1, 1, 2, 1), (3, (1, 2, 2), (0, 1, 0), 0, 1, (2, 1, 1)),
]


def _case_id(c):
    return "-".join(map(str, c)).replace(" ", "")


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("with_bias", [False, True], ids=["nobias", "bias"])
def test_matches_torch(rng, case, with_bias):
    nsp, stride, pad, opad, groups, dil = case
    ours, theirs = FUNCS[nsp]
    c_in, c_out, k = 2 * groups, 3 * groups, 3
    x = random(rng, (2, c_in) + (4,) * nsp, "f32")
    w = random(rng, (c_in, c_out // groups) + (k,) * nsp, "f32")
    b = random(rng, (c_out,), "f32") if with_bias else None
    t = [None if a is None else torch.from_numpy(a) for a in (x, w, b)]
    expected = theirs(*t, stride=stride, padding=pad, output_padding=opad, groups=groups,
                      dilation=dil).numpy().astype(np.float64)
    got = ours(x, w, b, stride, pad, opad, groups, dil)
    pads = og.padding.from_torch(pad, opad, kernel=(k,) * nsp, strides=stride, dilations=dil)
    kw = dict(strides=stride, dilations=dil, groups=groups, **pads.attrs())
    assert_close_to_torch(got, expected, x, w, kw, terms=c_in // groups * k**nsp + 1)
    # torch tensors in, a torch tensor out: same bits, written in place.
    out = torch.empty(got.shape)
    assert ours(*t, stride, pad, opad, groups, dil, out=out) is out
    np.testing.assert_array_equal(out.numpy(), got)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_output_size_form_matches_torch_module(rng, nsp):
    ours, _ = FUNCS[nsp]
    module = getattr(torch.nn, f"ConvTranspose{nsp}d")(2, 3, 3, stride=2, padding=1, bias=False)
    x = random(rng, (1, 2) + (4,) * nsp, "f32")
    size = tuple(7 + (i % 2) for i in range(nsp))  # the smallest (7) and the largest (8)
    with torch.no_grad():
        expected = module(torch.from_numpy(x), output_size=size).numpy()
    w = module.weight.detach()  # requires_grad parameters are read in place
    got = ours(x, w, stride=2, padding=1, output_size=size)
    assert got.shape == expected.shape
    assert_close_to_torch(got, expected, x, w.numpy(), dict(
        strides=2, pads_begin=1, pads_end=1,
        output_padding=[s - 7 for s in size]), terms=2 * 3**nsp)
    with pytest.raises(ValueError, match=r"output_size\[0\] = 9 is not in \[7, 8\]"):
        ours(x, w, stride=2, padding=1, output_size=(9,) * nsp)


def test_unbatched_matches_torch(rng):
    x, w = random(rng, (2, 5), "f32"), random(rng, (2, 3, 3), "f32")
    expected = F.conv_transpose1d(torch.from_numpy(x), torch.from_numpy(w), stride=2).numpy()
    got = torch_like.conv_transpose1d(x, w, stride=2)
    assert got.shape == expected.shape == (3, 11)
    assert_close_to_torch(got[None], expected[None], x[None], w, dict(strides=2), terms=6)
    out = torch.zeros(3, 11)
    assert torch_like.conv_transpose1d(torch.from_numpy(x), w, stride=2, out=out) is out
    np.testing.assert_array_equal(out.numpy(), got)


@pytest.mark.parametrize("pairs", [[(0, 2)], [(2, 0)], [(1, 3)]])
def test_asymmetric_padding_is_a_crop_of_torch(rng, pairs):
    # PyTorch expresses an asymmetric crop as its unpadded output, sliced.
    x, w = random(rng, (1, 2, 5), "f32"), random(rng, (2, 2, 4), "f32")
    full = F.conv_transpose1d(torch.from_numpy(x), torch.from_numpy(w), stride=2).numpy()
    (b, e), = pairs
    got = torch_like.conv_transpose1d(x, w, stride=2, padding=pairs)
    assert_close_to_torch(got, full[..., b:full.shape[-1] - e], x, w,
                          dict(strides=2, pads_begin=b, pads_end=e), terms=8)


@pytest.mark.parametrize("k,s", [(3, 2), (4, 2), (2, 2), (1, 3), (5, 1)])
def test_same_padding(rng, dtype, k, s):
    x, w = random(rng, (1, 2, 5, 3), dtype), random(rng, (2, 2, k, k), dtype)
    got = torch_like.conv_transpose2d(x, w, stride=s, padding="same")
    assert got.shape == (1, 2, 5 * s, 3 * s)
    pads = og.padding.from_torch("same", kernel=(k, k), strides=s)
    assert_matches_reference(got, og.reference.conv_transpose, (x, w),
                             dict(strides=s, **pads.attrs(), **NCX), dtype, terms=2 * k * k)


def test_low_precision_against_reference(rng, dtype):
    x, w, b = (random(rng, sh, dtype) for sh in [(2, 4, 3, 3), (4, 1, 3, 3), (2,)])
    got = torch_like.conv_transpose2d(x, w, b, stride=2, padding=[(1, 0), (0, 1)], groups=2,
                                      output_padding=1)
    assert_matches_reference(got, og.reference.conv_transpose, (x, w, b),
                             dict(strides=2, pads_begin=(1, 0), pads_end=(0, 1), groups=2,
                                  output_padding=1, **NCX), dtype, terms=2 * 9 + 1)


def test_output_padding_past_stride_with_dilation(rng):
    # PyTorch allows output_padding < dilation; the folded pads_end (-2) is
    # <= -stride, which oneDNN 3.2 rejects, so the package runs the op on a view
    # without the outputs no kernel window reaches (they are the bias).
    x, w, b = random(rng, (1, 1, 4), "f32"), random(rng, (1, 1, 3), "f32"), random(rng, (1,), "f32")
    got = torch_like.conv_transpose1d(x, w, b, stride=2, output_padding=2, dilation=3)

    def torch_ct(x_, w_, b_):
        return F.conv_transpose1d(*(torch.from_numpy(np.asarray(a, np.float64)) for a in (x_, w_, b_)),
                                  stride=2, output_padding=2, dilation=3).numpy()

    # at most C_in * K products + the bias per element (onednn_graph.tolerance)
    result = compare(got, torch_ct, (x, w, b), {}, "f32", terms=1 * 3 + 1)
    assert result.ok, str(result)


def test_errors_name_the_argument():
    x, w = np.ones((1, 2, 4), np.float32), np.ones((2, 1, 3), np.float32)
    with pytest.raises(ValueError, match="weight must be 3-d"):
        torch_like.conv_transpose1d(x, w[0])
    with pytest.raises(ValueError, match="input must be 2-d .unbatched. or 3-d"):
        torch_like.conv_transpose1d(x[None], w)
    with pytest.raises(ValueError, match="smaller than stride"):
        torch_like.conv_transpose1d(x, w, stride=2, output_padding=2)
    with pytest.raises(ValueError, match="output_size replaces output_padding"):
        torch_like.conv_transpose1d(x, w, stride=2, output_padding=1, output_size=(10,))
    with pytest.raises(TypeError, match="input must be an array"):
        torch_like.conv_transpose1d([1.0], w)

"""Arrays from other libraries: DLPack, the buffer protocol, __array_interface__, PyTorch.

Zero-copy is proved by address: the NumPy view the package hands oneDNN starts
at the caller's data pointer and shares its memory. Results are compared with
the same call on plain NumPy arrays, which test_ops.py checks against the
reference; the two must be bit-identical (same kernel, same bytes in).
"""

import array

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph._impl import arrays as _arrays

from helpers import NUMPY, random

KW = dict(strides=2, pads_begin=1, pads_end=0, data_format="NCX", weights_format="IOX")


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class DLPackOnly:
    """Exports a NumPy array through DLPack and nothing else (like a foreign array)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class InterfaceOnly:
    """Exports a NumPy array through __array_interface__ only."""

    def __init__(self, a):
        self._a = a
        self.__array_interface__ = a.__array_interface__


@pytest.mark.parametrize("wrap", [DLPackOnly, InterfaceOnly, memoryview], ids=lambda w: w.__name__)
def test_foreign_inputs_are_viewed_not_copied(rng, wrap):
    x = random(rng, (2, 3, 4), "f32")
    w = random(rng, (3, 2, 3), "f32")
    view = _arrays.as_input("src", wrap(x))
    assert address(view) == address(x) and np.shares_memory(view, x)
    expected = og.conv_transpose(x, w, **KW)
    np.testing.assert_array_equal(og.conv_transpose(wrap(x), wrap(w), **KW), expected)


def test_buffer_protocol_array_module(rng):
    # array.array exports a 1-D float buffer; it is a bias here.
    x = random(rng, (1, 2, 3), "f32")
    w = random(rng, (2, 3, 2), "f32")
    b = array.array("f", [0.5, -1.0, 2.0])
    got = og.conv_transpose(x, w, b, **KW)
    np.testing.assert_array_equal(got, og.conv_transpose(x, w, np.array(b, np.float32), **KW))


@pytest.mark.parametrize("bad", [[1.0, 2.0], 3.0, "x", None, (1, 2)])
def test_non_arrays_are_refused(bad):
    with pytest.raises(TypeError, match="src must be an array"):
        og.conv_transpose(bad, np.ones((1, 1, 1), np.float32))


def test_out_may_be_any_writeable_exporter(rng):
    x = random(rng, (1, 1, 3), "f32")
    w = random(rng, (1, 1, 2), "f32")
    out = np.full((1, 1, 5), np.nan, np.float32)
    got = og.conv_transpose(x, w, out=memoryview(out), **KW)
    assert isinstance(got, memoryview)  # the caller's object comes back
    np.testing.assert_array_equal(out, og.conv_transpose(x, w, **KW))
    with pytest.raises(ValueError, match="read-only"):
        og.conv_transpose(x, w, out=memoryview(bytes(20)).cast("f", (1, 1, 5)), **KW)


# --------------------------------------------------------------------------
# PyTorch
# --------------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch")


TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def _tensor(torch, a):
    """A torch tensor holding the same values as NumPy array `a` (bf16 via its bits)."""
    if a.dtype == NUMPY["bf16"]:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def test_torch_inputs_zero_copy(rng, dtype):
    torch = _torch()
    t = _tensor(torch, random(rng, (2, 3, 4, 5), dtype))
    view = _arrays.as_input("src", t)
    assert view.dtype == NUMPY[dtype]
    assert address(view) == t.data_ptr()
    # A transposed (non-contiguous) tensor is described by strides, still no copy.
    tt = t.transpose(2, 3)
    view = _arrays.as_input("src", tt)
    assert address(view) == tt.data_ptr() and view.strides == tuple(
        s * t.element_size() for s in tt.stride())


def test_torch_tensors_give_the_numpy_result(rng, dtype):
    torch = _torch()
    x, w, b = (random(rng, s, dtype) for s in [(2, 3, 4, 5), (3, 2, 3, 3), (2,)])
    expected = og.conv_transpose(x, w, b, **KW)
    xt, wt, bt = (_tensor(torch, a) for a in (x, w, b))
    wt.requires_grad_(True)  # detached for reading, never copied
    got = og.conv_transpose(xt, wt, bt, **KW)
    assert isinstance(got, np.ndarray) and got.dtype == NUMPY[dtype]
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def test_torch_out_is_written_in_place_and_returned(rng, dtype):
    torch = _torch()
    x, w = random(rng, (1, 3, 4), dtype), random(rng, (3, 2, 3), dtype)
    expected = og.conv_transpose(x, w, **KW)
    out = torch.empty(expected.shape, dtype=getattr(torch, TORCH_DTYPES[dtype]))
    ptr = out.data_ptr()
    got = og.conv_transpose(_tensor(torch, x), _tensor(torch, w), out=out, **KW)
    assert got is out and out.data_ptr() == ptr
    np.testing.assert_array_equal(_arrays.to_numpy("out", out).view(np.uint8),
                                  expected.view(np.uint8))


def test_torch_out_errors(rng):
    torch = _torch()
    x = torch.ones(1, 1, 3)
    w = torch.ones(1, 1, 2)
    with pytest.raises(ValueError, match="requires grad"):
        og.conv_transpose(x, w, out=torch.zeros(1, 1, 5, requires_grad=True), **KW)
    with pytest.raises(TypeError, match="dtype float64"):
        og.conv_transpose(x, w, out=torch.zeros(1, 1, 5, dtype=torch.float64), **KW)
    with pytest.raises(ValueError, match="shares memory"):
        og.conv_transpose(x, w, out=x, **dict(KW, strides=1))


def test_torch_backward_ops_and_reference(rng):
    torch = _torch()
    x, w, dy = (random(rng, s, "f32") for s in [(2, 3, 4), (3, 2, 3), (2, 2, 7)])
    xt, wt, dyt = (torch.from_numpy(a) for a in (x, w, dy))
    np.testing.assert_array_equal(og.conv_transpose_backward_data(dyt, wt, **KW),
                                  og.conv_transpose_backward_data(dy, w, **KW))
    # weights_shape inferred from the tensors' shapes
    np.testing.assert_array_equal(og.conv_transpose_backward_weights(xt, dyt, **KW),
                                  og.conv_transpose_backward_weights(x, dy, **KW))
    np.testing.assert_array_equal(og.reference.conv_transpose(xt, wt, **KW),
                                  og.reference.conv_transpose(x, w, **KW))


def test_low_level_tensor_views_a_torch_tensor(rng, dtype):
    torch = _torch()
    t = _tensor(torch, random(rng, (2, 3), dtype))
    lt = og.LogicalTensor(0, dtype, (2, 3))
    view = og.Tensor(lt, og.Engine(), t).numpy()
    assert address(view) == t.data_ptr() and view.dtype == NUMPY[dtype]
    with pytest.raises(TypeError, match="array must be an array"):
        og.Tensor(lt, og.Engine(), [[0.0] * 3] * 2)


def test_calls_on_torch_tensors_are_cached(rng):
    """A call on torch tensors (any non-NumPy array) compiles once and is then found in the
    cache, as one on ndarrays is: the tensors are read as NumPy views of their memory.
    Truth: the cache's own counts, and the reference for the result."""
    torch = _torch()
    og.cache.clear_cache()
    x, w = _tensor(torch, random(rng, (1, 3, 3, 4), "f32")), _tensor(torch, random(rng, (2, 2, 5, 4), "f32"))
    out = torch.empty(1, 6, 6, 5)
    for _ in range(3):
        assert og.conv_transpose(x, w, strides=2, out=out) is out
    info = og.cache.cache_info()
    assert (info.misses, info.hits) == (1, 2)
    want = og.reference.conv_transpose(x.numpy(), w.numpy(), strides=2)
    assert np.allclose(out.numpy(), want, atol=1e-5)
    with pytest.raises(ValueError, match="out is a torch tensor that requires grad"):
        og.conv_transpose(x, w, strides=2, out=out.requires_grad_())

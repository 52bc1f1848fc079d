"""The bias gradient's sum (onednn_graph.torch._channel_sum): every layout its forms take
(channels first by oneDNN's jit reduction, channels last as one MatMul, bf16/f16 and
gaps through the package's f32 scratch copy, a single position or sample).

Truth: the float64 sum of the same values, within onednn_graph.tolerance's bound (one
rounding to the dtype plus f32 accumulation of the N*M values summed per channel).
"""

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from onednn_graph.tolerance import bound  # noqa: E402
from onednn_graph.torch._channel_sum import channel_sum  # noqa: E402

SHAPES = [(1, 8, 5, 5), (3, 8, 5, 5), (2, 4, 7), (2, 3, 2, 3, 4), (8, 1, 32, 32), (1, 2, 6, 6, 6),
          (4, 3), (1, 5), (1, 3, 1, 1),
          # spatial axes of one position, whose strides say nothing (a 1-D signal as (N, C, L, 1))
          (8, 64, 32, 1), (2, 16, 1, 9), (2, 8, 5, 1, 4), (3, 8, 1, 1, 7)]
DTYPES = {"f32": (np.float32, torch.float32), "bf16": (ml_dtypes.bfloat16, torch.bfloat16),
          "f16": (np.float16, torch.float16)}


def _values(shape, layout, torch_dtype, rng):
    t = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    if layout == "channels_last":
        t = t.to(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)
    elif layout == "gaps":
        wide = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(np.float32)
        t = torch.from_numpy(wide)[..., ::2]
    return t.to(torch_dtype)


CASES = [(s, layout) for s in SHAPES for layout in ("dense", "channels_last", "gaps")
         if layout != "channels_last" or len(s) in (4, 5)]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape, layout", CASES, ids=[f"{s}-{lay}" for s, lay in CASES])
def test_the_sum_over_every_axis_but_1_in_every_layout(shape, layout, dtype, rng):
    np_dtype, torch_dtype = DTYPES[dtype]
    t = _values(shape, layout, torch_dtype, rng)
    values = t.numpy() if dtype == "f32" else t.view(torch.int16).numpy().view(np_dtype)
    out = np.full(shape[1], 7, np_dtype)
    axes = tuple(a for a in range(len(shape)) if a != 1)
    exact = values.astype(np.float64)
    for _ in range(2):  # compiled on the first call, kept for the second
        channel_sum("values", values, out)
        tol = bound(exact.sum(axis=axes), np.abs(exact).sum(axis=axes), dtype,
                    exact.size // shape[1]) + 1e-30
        assert (np.abs(out.astype(np.float64) - exact.sum(axis=axes)) <= tol).all()

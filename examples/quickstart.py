"""Quick start: one ConvTranspose on oneDNN from NumPy, checked by hand, then in bf16.

What this shows
    The functional API: NumPy arrays in, a NumPy array out, computed by oneDNN's
    kernel for this CPU; the largest difference to a direct NumPy computation; and
    the same op in bf16, with how this CPU runs it (oneDNN's bf16 kernel, or the op
    in f32 between oneDNN TypeCasts where the CPU has none).

Assumptions
    The package is installed (`pip install .`); an x86-64 CPU is all it needs.
"""

import ml_dtypes
import numpy as np

import onednn_graph as og

rng = np.random.default_rng(0)
N, C_IN, C_OUT, H, W, K, STRIDE = 2, 8, 4, 5, 5, 3, 2

# NCX data and IOX weights, the layouts PyTorch uses for conv_transpose2d.
x = rng.standard_normal((N, C_IN, H, W), dtype=np.float32)
w = rng.standard_normal((C_IN, C_OUT, K, K), dtype=np.float32)

# One call: checked, compiled once for this signature, run by oneDNN.
y = og.conv_transpose(x, w, strides=STRIDE, data_format="NCX", weights_format="IOX")

# Direct NumPy: every input pixel scatters a K x K block, STRIDE apart.
expected = np.zeros(y.shape, np.float64)
for i in range(H):
    for j in range(W):
        patch = np.einsum("nc,cokl->nokl", x[:, :, i, j], w, dtype=np.float64)
        expected[:, :, i * STRIDE:i * STRIDE + K, j * STRIDE:j * STRIDE + K] += patch

v = og.system.onednn_version()
print(f"oneDNN {v.major}.{v.minor}.{v.patch} ({v.cpu_runtime}), CPU ISA: {og.system.cpu_isa()}")
print(f"ConvTranspose {x.shape} -> {y.shape}: max |oneDNN - NumPy| = "
      f"{np.max(np.abs(y - expected)):.3g}")

# bf16: oneDNN's bf16 kernel where this CPU has one (AVX-512), else the op in f32
# between conversions, which rounds once, as such a kernel does. compile_op compiles
# for a signature once and says how it runs (ct.lowering has the details).
xb, wb = x.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16)
ct = og.compile_op("ConvTranspose", src=xb, weights=wb, strides=STRIDE, data_format="NCX",
                   weights_format="IOX")
yb = ct(xb, wb)
exact = og.conv_transpose(xb.astype(np.float32), wb.astype(np.float32), strides=STRIDE,
                          data_format="NCX", weights_format="IOX")
how = "oneDNN's bf16 kernel" if ct.compute_dtype == ct.dtype else "f32 kernel, bf16 in and out"
print(f"bf16: {how}; max |bf16 - f32| / max |f32| = "
      f"{np.max(np.abs(yb.astype(np.float32) - exact)) / np.max(np.abs(exact)):.2g}")

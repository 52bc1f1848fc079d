// The package's own dtype conversions between f32 and bf16 / f16, on contiguous
// runs of elements: one portable version and vectorized ones for AVX2 (+F16C) and
// AVX-512, chosen at run time.
//
// Why the package converts at all: where oneDNN 3.2 has no bf16/f16 kernel for an
// op, the op runs in f32 between TypeCasts (python/onednn_graph/_impl/as_f32.py),
// and oneDNN's only reorder for some of those pairs is its scalar `simple:any`
// (33-50 ns per element on AVX2). A conversion is data movement, not the op's
// arithmetic: upcasts are exact, downcasts one round-to-nearest-even.
//
// Every version gives, bit for bit, what ml_dtypes (bf16) and NumPy's astype (f16)
// give, which is what the tests hold them to over every bf16/f16 bit pattern:
//  * bf16 -> f32 and f16 -> f32 are exact; a NaN keeps its sign and payload (a
//    signalling NaN stays signalling: NumPy's f16 cast does not quiet it, where the
//    F16C instruction does, so its NaN lanes are redone by the portable code);
//  * f32 -> bf16 rounds to nearest even; any NaN becomes 0x7fc0 with its sign
//    (ml_dtypes' canonical quiet NaN);
//  * f32 -> f16 rounds to nearest even, subnormals kept, overflow to infinity; a
//    NaN keeps its sign and the payload's top ten bits, and a payload that would
//    vanish becomes 1 so that it stays a NaN (NumPy's rule);
//  * nothing depends on MXCSR (flush-to-zero, denormals-are-zero): the portable and
//    bf16 code is integer arithmetic, and the F16C conversions ignore both.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onednn_graph {

// The code a conversion runs. The order is the order of preference.
enum class CastPath { portable, avx2, avx512 };

// The pairs converted; `from` and `to` are f32, bf16 or f16, one of them f32. f32 to
// f32 is a plain copy: the same strided walk and threads rearrange f32 data (the
// kernel == stride MatMul formulation, python/onednn_graph/_impl/matmul_form.py).
enum class CastPair { bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, f32_to_f32 };

// Converts n contiguous elements from `src` to `dst` (which do not overlap).
using CastRow = void (*)(const void *src, void *dst, size_t n);

// The row function of `pair` on `path`; the caller has checked that the running
// CPU has that path's instructions (cast_path_available).
CastRow cast_row(CastPair pair, CastPath path);

// dst[i * dst_row + j] = src[j * src_row + i] for i, j < transpose_block_size (strides in
// elements): one block of a transposing f32 copy (an NCX <-> NXC rearrangement), bit for
// bit, whatever the values (NaN payloads included).
constexpr int transpose_block_size = 16;
using TransposeBlock = void (*)(const float *src, int64_t src_row, float *dst, int64_t dst_row);

// The block function of `path`: AVX-512 transposes the block in registers, AVX2 one
// 8 x 8 quarter at a time, the portable loop element by element.
TransposeBlock transpose_block(CastPath path);

// The same for a partial block at an edge, i < rows and j < cols: element by element.
void transpose_edge(const float *src, int64_t src_row, float *dst, int64_t dst_row, int rows, int cols);

// Whether this CPU has the instructions of `path`: AVX2 with F16C, or AVX-512 F, BW
// and VL. (Whether oneDNN's ISA cap allows it is the caller's question.)
bool cast_path_available(CastPath path);

// One element, portably: the definition the vectorized rows agree with.
uint32_t bf16_to_f32_bits(uint16_t h);
uint32_t f16_to_f32_bits(uint16_t h);
uint16_t f32_to_bf16_bits(uint32_t f);
uint16_t f32_to_f16_bits(uint32_t f);

} // namespace onednn_graph

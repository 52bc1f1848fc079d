// The conversions of cast_kernels.hpp: the portable definitions, then the AVX2 and
// AVX-512 rows, compiled with per-function target attributes so that the rest of
// the extension keeps the baseline ISA and only a CPU that has them runs them.
#include "cast_kernels.hpp"

#include <cstring>

#include <immintrin.h>

namespace onednn_graph {

uint32_t bf16_to_f32_bits(uint16_t h) {
    return static_cast<uint32_t>(h) << 16;
}

uint16_t f32_to_bf16_bits(uint32_t f) {
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((f >> 16) & 0x8000u) | 0x7fc0u);
    // Round to nearest even on the 16 bits dropped; a carry out of the exponent
    // gives infinity, as IEEE rounding does (the largest value here, -inf, plus
    // 0x8000 stays below 2**32).
    return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

uint32_t f16_to_f32_bits(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    if (exponent == 0x1f) return sign | 0x7f800000u | (mantissa << 13); // inf, NaN (payload kept)
    if (exponent != 0) return sign | ((exponent + 112) << 23) | (mantissa << 13);
    if (mantissa == 0) return sign;
    // A subnormal, mantissa * 2**-24: normal in f32, its leading bit becomes implicit.
    const int top = 31 - __builtin_clz(mantissa); // 0..9
    return sign | (static_cast<uint32_t>(top + 103) << 23) | ((mantissa << (23 - top)) & 0x7fffffu);
}

uint16_t f32_to_f16_bits(uint32_t f) {
    const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
    const uint32_t a = f & 0x7fffffffu;
    if (a > 0x7f800000u) { // NaN: the payload's top ten bits, never all zero
        const uint32_t payload = (a >> 13) & 0x3ffu;
        return static_cast<uint16_t>(sign | 0x7c00u | (payload ? payload : 1u));
    }
    if (a >= 0x47800000u) return sign | 0x7c00u; // >= 2**16 (and inf): infinity
    if (a >= 0x38800000u) // a normal f16 (or, by the carry, the next power of two, up to inf)
        return static_cast<uint16_t>(sign | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
    // A subnormal f16 (or zero): m * 2**(e - 150) in units of 2**-24 is m >> (126 - e),
    // rounded to nearest even; below 2**-25 (e < 102) that is 0.
    const uint32_t e = a >> 23;
    if (e < 102) return sign;
    const uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e; // 14..24
    return static_cast<uint16_t>(sign | ((m + (1u << (shift - 1)) - 1 + ((m >> shift) & 1u)) >> shift));
}

namespace {

// ---- portable: one element at a time (the compiler vectorizes the first two)

void portable_bf16_to_f32(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint16_t *>(src);
    auto *d = static_cast<uint32_t *>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = bf16_to_f32_bits(s[i]);
}

void portable_f32_to_bf16(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint32_t *>(src);
    auto *d = static_cast<uint16_t *>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16_bits(s[i]);
}

void portable_f16_to_f32(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint16_t *>(src);
    auto *d = static_cast<uint32_t *>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = f16_to_f32_bits(s[i]);
}

void portable_f32_to_f16(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint32_t *>(src);
    auto *d = static_cast<uint16_t *>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = f32_to_f16_bits(s[i]);
}

// ---- AVX2 (+F16C): 8 elements a step; a tail of fewer runs the portable code.

#define ONEDNN_GRAPH_AVX2 __attribute__((target("avx2,f16c")))

ONEDNN_GRAPH_AVX2 void avx2_bf16_to_f32(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint16_t *>(src);
    auto *d = static_cast<uint32_t *>(dst);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    portable_bf16_to_f32(s + i, d + i, n - i);
}

// f32 rounded to nearest even on the 16 bits dropped, for 8 lanes that hold no NaN;
// the results (<= 0xffff) in 32-bit lanes.
ONEDNN_GRAPH_AVX2 inline __m256i avx2_bf16_lanes(__m256i f) {
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(f, 16), _mm256_set1_epi32(1));
    return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(f, _mm256_set1_epi32(0x7fff)), lsb), 16);
}

ONEDNN_GRAPH_AVX2 inline bool avx2_any_nan(__m256i f) {
    const __m256i magnitude = _mm256_and_si256(f, _mm256_set1_epi32(0x7fffffff));
    return _mm256_movemask_epi8(_mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000))) != 0;
}

ONEDNN_GRAPH_AVX2 void avx2_f32_to_bf16(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint32_t *>(src);
    auto *d = static_cast<uint16_t *>(dst);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + i));
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + i + 8));
        if (avx2_any_nan(lo) || avx2_any_nan(hi)) {
            portable_f32_to_bf16(s + i, d + i, 16); // a NaN lane: ml_dtypes' quiet NaN
            continue;
        }
        // packus works within 128-bit halves (lo0-3 hi0-3 lo4-7 hi4-7): put the
        // quarters back in order. The lanes are 0..0xffff, so nothing saturates.
        const __m256i packed = _mm256_permute4x64_epi64(
                _mm256_packus_epi32(avx2_bf16_lanes(lo), avx2_bf16_lanes(hi)), 0xd8);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + i), packed);
    }
    portable_f32_to_bf16(s + i, d + i, n - i);
}

ONEDNN_GRAPH_AVX2 void avx2_f16_to_f32(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint16_t *>(src);
    auto *d = static_cast<uint32_t *>(dst);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i));
        // A NaN lane (magnitude above 0x7c00) is redone portably: F16C quiets it.
        const __m128i nan = _mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7c00));
        if (_mm_movemask_epi8(nan)) {
            portable_f16_to_f32(s + i, d + i, 8);
            continue;
        }
        _mm256_storeu_ps(reinterpret_cast<float *>(d + i), _mm256_cvtph_ps(h));
    }
    portable_f16_to_f32(s + i, d + i, n - i);
}

ONEDNN_GRAPH_AVX2 void avx2_f32_to_f16(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint32_t *>(src);
    auto *d = static_cast<uint16_t *>(dst);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i f = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + i));
        const __m256i magnitude = _mm256_and_si256(f, _mm256_set1_epi32(0x7fffffff));
        if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000)))) {
            portable_f32_to_f16(s + i, d + i, 8); // a NaN lane: F16C would quiet it
            continue;
        }
        const __m128i h = _mm256_cvtps_ph(_mm256_castsi256_ps(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d + i), h);
    }
    portable_f32_to_f16(s + i, d + i, n - i);
}

// ---- AVX-512 (F, BW, VL): 16 elements a step.

#define ONEDNN_GRAPH_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))

ONEDNN_GRAPH_AVX512 void avx512_bf16_to_f32(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint16_t *>(src);
    auto *d = static_cast<uint32_t *>(dst);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + i));
        _mm512_storeu_si512(d + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    portable_bf16_to_f32(s + i, d + i, n - i);
}

ONEDNN_GRAPH_AVX512 void avx512_f32_to_bf16(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint32_t *>(src);
    auto *d = static_cast<uint16_t *>(dst);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i f = _mm512_loadu_si512(s + i);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(
                _mm512_and_si512(f, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
        if (nan) {
            portable_f32_to_bf16(s + i, d + i, 16); // a NaN lane: ml_dtypes' quiet NaN
            continue;
        }
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(f, 16), _mm512_set1_epi32(1));
        const __m512i rounded = _mm512_srli_epi32(
                _mm512_add_epi32(_mm512_add_epi32(f, _mm512_set1_epi32(0x7fff)), lsb), 16);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + i), _mm512_cvtepi32_epi16(rounded));
    }
    portable_f32_to_bf16(s + i, d + i, n - i);
}

ONEDNN_GRAPH_AVX512 void avx512_f16_to_f32(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint16_t *>(src);
    auto *d = static_cast<uint32_t *>(dst);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + i));
        const __mmask16 nan = _mm256_cmpgt_epu16_mask(_mm256_and_si256(h, _mm256_set1_epi16(0x7fff)),
                _mm256_set1_epi16(0x7c00));
        if (nan) {
            portable_f16_to_f32(s + i, d + i, 16); // F16C would quiet the NaN lanes
            continue;
        }
        _mm512_storeu_ps(d + i, _mm512_cvtph_ps(h));
    }
    portable_f16_to_f32(s + i, d + i, n - i);
}

ONEDNN_GRAPH_AVX512 void avx512_f32_to_f16(const void *src, void *dst, size_t n) {
    const auto *s = static_cast<const uint32_t *>(src);
    auto *d = static_cast<uint16_t *>(dst);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i f = _mm512_loadu_si512(s + i);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(
                _mm512_and_si512(f, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
        if (nan) {
            portable_f32_to_f16(s + i, d + i, 16);
            continue;
        }
        const __m256i h = _mm512_cvtps_ph(_mm512_castsi512_ps(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + i), h);
    }
    portable_f32_to_f16(s + i, d + i, n - i);
}

void portable_transpose_block(const float *src, int64_t src_row, float *dst, int64_t dst_row) {
    transpose_edge(src, src_row, dst, dst_row, transpose_block_size, transpose_block_size);
}

// Eight rows of eight: pairs of 32-bit elements, then pairs of pairs, then the 128-bit
// halves (shuffles and permutes move bits only).
ONEDNN_GRAPH_AVX2 inline void avx2_transpose_8x8(const float *src, int64_t src_row, float *dst, int64_t dst_row) {
    __m256 r[8], t[8];
    for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + j * src_row);
    for (int j = 0; j < 4; ++j) {
        t[2 * j] = _mm256_unpacklo_ps(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm256_unpackhi_ps(r[2 * j], r[2 * j + 1]);
    }
    for (int h = 0; h < 2; ++h) {
        r[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(dst + i * dst_row, _mm256_permute2f128_ps(r[i], r[4 + i], 0x20));
        _mm256_storeu_ps(dst + (4 + i) * dst_row, _mm256_permute2f128_ps(r[i], r[4 + i], 0x31));
    }
}

ONEDNN_GRAPH_AVX2 void avx2_transpose_block(const float *src, int64_t src_row, float *dst, int64_t dst_row) {
    for (int i = 0; i < 16; i += 8)
        for (int j = 0; j < 16; j += 8)
            avx2_transpose_8x8(src + j * src_row + i, src_row, dst + i * dst_row + j, dst_row);
}

#define ONEDNN_GRAPH_LO64(a, b) _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
#define ONEDNN_GRAPH_HI64(a, b) _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))

// Sixteen rows of sixteen in four steps of shuffles (which move bits, never values as
// numbers): pairs of 32-bit elements, pairs of 64-bit ones, then 128-bit lanes twice.
ONEDNN_GRAPH_AVX512 void avx512_transpose_block(const float *src, int64_t src_row, float *dst, int64_t dst_row) {
    __m512 r[16], t[16];
    for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_ps(src + j * src_row);
    for (int j = 0; j < 8; ++j) {
        t[2 * j] = _mm512_unpacklo_ps(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm512_unpackhi_ps(r[2 * j], r[2 * j + 1]);
    }
    for (int j = 0; j < 4; ++j) {
        r[4 * j] = ONEDNN_GRAPH_LO64(t[4 * j], t[4 * j + 2]);
        r[4 * j + 1] = ONEDNN_GRAPH_HI64(t[4 * j], t[4 * j + 2]);
        r[4 * j + 2] = ONEDNN_GRAPH_LO64(t[4 * j + 1], t[4 * j + 3]);
        r[4 * j + 3] = ONEDNN_GRAPH_HI64(t[4 * j + 1], t[4 * j + 3]);
    }
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j) {
            t[8 * h + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0x88);
            t[8 * h + 4 + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; ++j) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    }
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + i * dst_row, r[i]);
}

#undef ONEDNN_GRAPH_LO64
#undef ONEDNN_GRAPH_HI64

} // namespace

void transpose_edge(const float *src, int64_t src_row, float *dst, int64_t dst_row, int rows, int cols) {
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) dst[i * dst_row + j] = src[j * src_row + i];
}

TransposeBlock transpose_block(CastPath path) {
    switch (path) {
    case CastPath::avx512: return avx512_transpose_block;
    case CastPath::avx2: return avx2_transpose_block;
    case CastPath::portable: break;
    }
    return portable_transpose_block;
}

bool cast_path_available(CastPath path) {
    __builtin_cpu_init();
    switch (path) {
    case CastPath::portable: return true;
    case CastPath::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case CastPath::avx512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c");
    }
    return false;
}

namespace {
void copy_f32(const void *src, void *dst, size_t n) { std::memcpy(dst, src, n * 4); }
} // namespace

CastRow cast_row(CastPair pair, CastPath path) {
    if (pair == CastPair::f32_to_f32) return copy_f32; // the same on every path
    static const CastRow table[3][4] = {
            {portable_bf16_to_f32, portable_f16_to_f32, portable_f32_to_bf16, portable_f32_to_f16},
            {avx2_bf16_to_f32, avx2_f16_to_f32, avx2_f32_to_bf16, avx2_f32_to_f16},
            {avx512_bf16_to_f32, avx512_f16_to_f32, avx512_f32_to_bf16, avx512_f32_to_f16},
    };
    return table[static_cast<int>(path)][static_cast<int>(pair)];
}

} // namespace onednn_graph

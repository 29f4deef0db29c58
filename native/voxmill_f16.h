// whisper.cpp patches 0022 and 0023 (native/whisper-patches.cmake): two of ggml's one-value-at-a-time f16 loops in the
// encoder, eight values at a time with the same bits. Copied beside the patched ggml-cpu/ops.cpp, which includes it;
// bench/native/f16-check.cc compares both with ggml's scalar arithmetic over every float.
//
// On x86, ggml-cpu rounds a float to f16 one value at a time with its portable bit-twiddling conversion
// (ggml_compute_fp32_to_fp16, round to nearest even), even where F16C is compiled in. vcvtps2ph with round to nearest
// even gives the same 16 bits for every float that is not a NaN; a NaN's payload may be rounded otherwise, so a block
// of eight holding a NaN, and the last n % 8 values, go to the caller's scalar loop.
#pragma once

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>

#include <cstdint>

#define VOXMILL_F16_VECTORIZED 1

static inline __m128i voxmill_f16_round(const __m256 v) {
  return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// The loop both kernels share: `block(y + i, v)` for each whole block of eight values v = x[i..i + 8) holding no NaN,
// `scalar(count, y + i, x + i)` for a block holding one and for the last n % 8 values. In place (y == x) is fine when
// `block` reads only v: each block is loaded whole before it is written.
template <typename Out, typename Block, typename Scalar>
static inline void voxmill_f16_by_eight(const int n, Out *y, const float *x, Block block, Scalar scalar) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      scalar(8, y + i, x + i);
    } else {
      block(y + i, v);
    }
  }
  if (i < n) {
    scalar(n - i, y + i, x + i);
  }
}

// 0023: y[i] = f16(x[i]) for i < n (ggml_compute_fp32_to_fp16's bits); `scalar(count, y, x)` for what the vector path
// leaves.
template <typename Scalar>
static inline void voxmill_fp32_to_fp16_row(const int n, uint16_t *y, const float *x, Scalar scalar) {
  voxmill_f16_by_eight(
      n, y, x,
      [](uint16_t *out, const __m256 v) { _mm_storeu_si128(reinterpret_cast<__m128i *>(out), voxmill_f16_round(v)); },
      scalar);
}

// 0022: ggml's GELU with GGML_GELU_FP16 (vec.h), per value: 0 at or below -10; the value itself at or above 10;
// otherwise the value rounded to f16, the f16 GELU looked up in a 65,536-entry table by those 16 bits, and widened to
// f32. Here one gather looks eight up and vcvtph2ps widens them exactly. y[i] = GELU(x[i]) for i < n through `table`,
// `scalar(count, y, x)` for what the vector path leaves. In place (y == x) is fine.
template <typename Scalar>
static inline void voxmill_gelu_f16_table(const int n, float *y, const float *x, const uint16_t *table, Scalar scalar) {
  const __m256 low = _mm256_set1_ps(-10.0f);
  const __m256 high = _mm256_set1_ps(10.0f);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i half_mask = _mm256_set1_epi32(0xFFFF);
  // Entries 2j and 2j + 1 are the low and high halves of the table's 32-bit word j: each lane gathers the aligned
  // pair holding its entry, so no lane reads outside the table (65,536 entries, an even count).
  const int *pairs = reinterpret_cast<const int *>(table);
  voxmill_f16_by_eight(
      n, y, x,
      [&](float *out, const __m256 v) {
        const __m256i bits = _mm256_cvtepu16_epi32(voxmill_f16_round(v));
        const __m256i word = _mm256_i32gather_epi32(pairs, _mm256_srli_epi32(bits, 1), 4);
        const __m256i shift = _mm256_slli_epi32(_mm256_and_si256(bits, one), 4);
        const __m256i gelu = _mm256_and_si256(_mm256_srlv_epi32(word, shift), half_mask);
        // Eight 16-bit values into the low 128 bits: pack within each 128-bit lane, then take quadwords 0 and 2.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(gelu, gelu), 0x08);
        __m256 result = _mm256_cvtph_ps(_mm256_castsi256_si128(packed));
        result = _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(v, low, _CMP_LE_OQ));
        result = _mm256_blendv_ps(result, v, _mm256_cmp_ps(v, high, _CMP_GE_OQ));
        _mm256_storeu_ps(out, result);
      },
      scalar);
}
#endif

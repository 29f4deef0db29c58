// expf over arrays, four values at a time, with the same bits as glibc's expf on CPUs with AVX2 and FMA; and
// whisper.cpp's log-softmax built on it, with the same bits as its scalar loops.
//
// whisper.cpp's beam search and greedy decoding take two exponentials per vocabulary entry, per decoder and step
// (the log-softmax's sum, then every probability): 2 x 51,864 scalar expf calls per beam and step
// (BENCHMARKS.md, patch 0020). glibc (2.28 and later) computes expf with the ARM optimized-routines algorithm: in
// double precision, x * 32 / ln 2 split into an integer k and a remainder r, 2^(k/32) from a 32-entry table and a cubic
// in r. On a CPU with FMA and AVX2, glibc's ifunc picks its FMA build of that code, whose fused multiply-adds are the
// ones below (read from the disassembly of Debian 12's __expf_fma). The same operations on four doubles at once give
// the same bits for every finite input under 88 in magnitude; the others (overflow, underflow, infinities, NaN) go to
// expf itself. `bench/native/expf-check.cc` compares all 2^32 inputs with the C library's expf (CI's soak tier runs
// it: test/soak/expf-exhaustive.test.ts). Checked against Debian 12's glibc 2.36; another glibc build could fuse its
// multiply-adds otherwise (the check program tells), the values staying within the algorithm's error bound.
//
// Used by whisper.cpp patch 0020 (native/whisper-patches.cmake). Without AVX2 and FMA, or off x86-64, every value
// goes through expf.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

// glibc's expf only: Apple's, musl's and Windows' C libraries compute it otherwise.
#if defined(__x86_64__) && defined(__GLIBC__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define VOXMILL_EXPF_X86 1
#endif

// 2^(i/32) as a double's bits, less i << 47 (so that adding k << 47 for k = i + 32 m also scales by 2^m).
static const uint64_t voxmill_expf_table[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

#ifdef VOXMILL_EXPF_X86
// expf of four floats, in order. Lanes glibc treats specially (|x| >= 88, infinities, NaN) are left to expf.
__attribute__((target("avx2,fma"))) static inline __m128 voxmill_expf4(__m128 xf) {
  const __m256d inv_ln2_n = _mm256_set1_pd(0x1.71547652b82fep+0 * 32);
  const __m256d shift = _mm256_set1_pd(0x1.8p+52);
  const __m256d c0 = _mm256_set1_pd(0x1.c6af84b912394p-5 / 32 / 32 / 32);
  const __m256d c1 = _mm256_set1_pd(0x1.ebfce50fac4f3p-3 / 32 / 32);
  const __m256d c2 = _mm256_set1_pd(0x1.62e42ff0c52d6p-1 / 32);
  // glibc takes its special path from top12(88.0f) = 0x42b on: |x| >= 88, infinities and NaN.
  const __m128i abstop = _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(xf), 20), _mm_set1_epi32(0x7ff));
  const int special = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(abstop, _mm_set1_epi32(0x42a))));
  const __m256d xd = _mm256_cvtps_pd(xf);
  // kd = fma(InvLn2N, xd, SHIFT), its bits are ki; kd -= SHIFT; r = fma(InvLn2N, xd, -kd)
  __m256d kd = _mm256_fmadd_pd(inv_ln2_n, xd, shift);
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, shift);
  const __m256d r = _mm256_fmsub_pd(inv_ln2_n, xd, kd);
  // s = 2^(k/32): the table's entry for k % 32 plus k << 47
  const __m256i entry = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(voxmill_expf_table),
                                               _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
  const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(entry, _mm256_slli_epi64(ki, 47)));
  // y = (fma(C0, r, C1) * r^2 + fma(C2, r, 1)) * s, with the last multiply-add fused too
  const __m256d z = _mm256_fmadd_pd(c0, r, c1);
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d p = _mm256_fmadd_pd(c2, r, _mm256_set1_pd(1.0));
  p = _mm256_fmadd_pd(z, r2, p);
  __m128 y = _mm256_cvtpd_ps(_mm256_mul_pd(p, s));
  if (special != 0) {
    float in[4], out[4];
    _mm_storeu_ps(in, xf);
    _mm_storeu_ps(out, y);
    for (int lane = 0; lane < 4; ++lane) {
      if (special & (1 << lane)) out[lane] = expf(in[lane]);
    }
    y = _mm_loadu_ps(out);
  }
  return y;
}

// y[i] = expf(x[i]) for i < n. Only for CPUs with AVX2 and FMA (voxmill_expf_vectorized()).
__attribute__((target("avx2,fma"))) static inline void voxmill_expf_avx2(const float* x, float* y, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, voxmill_expf4(_mm_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = expf(x[i]);
}

// y[i] = expf(x[i] - max) where x[i] > -inf, else 0, for i < n; returns their sum, added one after another from 0 in
// float (the log-softmax's order: the additions overlap the next values' arithmetic instead of following it).
__attribute__((target("avx2,fma"))) static inline float voxmill_expf_shifted_sum_avx2(const float* x, float max,
                                                                                      float* y, int n) {
  const __m128 shift = _mm_set1_ps(max);
  const __m128 minus_infinity = _mm_set1_ps(-INFINITY);
  float sum = 0.0f;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 xf = _mm_loadu_ps(x + i);
    // x - max where x > -inf (NaN compares false), else -inf, whose expf is 0
    const __m128 shifted =
        _mm_blendv_ps(minus_infinity, _mm_sub_ps(xf, shift), _mm_cmp_ps(xf, minus_infinity, _CMP_GT_OQ));
    float e[4];
    _mm_storeu_ps(e, voxmill_expf4(shifted));
    _mm_storeu_ps(y + i, _mm_loadu_ps(e));
    sum += e[0];
    sum += e[1];
    sum += e[2];
    sum += e[3];
  }
  for (; i < n; ++i) {
    y[i] = x[i] > -INFINITY ? expf(x[i] - max) : 0.0f;
    sum += y[i];
  }
  return sum;
}

// The largest of x[0..n) as std::max_element finds it, or NAN where it cannot tell that value from the vector maximum
// (a NaN among them, or a largest value of zero, whose sign the first occurrence decides).
__attribute__((target("avx2,fma"))) static inline float voxmill_max_avx2(const float* x, int n) {
  __m256 largest = _mm256_set1_ps(-INFINITY);
  __m256 unordered = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    largest = _mm256_max_ps(largest, v);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, largest);
  float result = -INFINITY;
  for (const float lane : lanes) result = lane > result ? lane : result;
  for (; i < n; ++i) {
    if (x[i] != x[i]) return NAN;
    result = x[i] > result ? x[i] : result;
  }
  if (_mm256_movemask_ps(unordered) != 0 || result == 0.0f) return NAN;
  return result;
}

// y[i] = x[i] > -inf ? x[i] - shift : -inf, for i < n (the log-softmax's last pass).
__attribute__((target("avx2,fma"))) static inline void voxmill_subtract_finite_avx2(const float* x, float shift,
                                                                                    float* y, int n) {
  const __m256 by = _mm256_set1_ps(shift);
  const __m256 minus_infinity = _mm256_set1_ps(-INFINITY);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 finite = _mm256_cmp_ps(v, minus_infinity, _CMP_GT_OQ);
    _mm256_storeu_ps(y + i, _mm256_blendv_ps(minus_infinity, _mm256_sub_ps(v, by), finite));
  }
  for (; i < n; ++i) y[i] = x[i] > -INFINITY ? x[i] - shift : -INFINITY;
}

// Over whole vectors of x[from..n): the first i with x[i] >= floor (a NaN never counts), or where the vectors end.
__attribute__((target("avx2"))) static inline int voxmill_skip_below_avx2(const float* x, int from, int n,
                                                                          float floor) {
  const __m256 at_least = _mm256_set1_ps(floor);
  int i = from;
  for (; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), at_least, _CMP_GE_OQ));
    if (mask != 0) return i + __builtin_ctz(mask);
  }
  return i;
}
#endif

// Whether the four-wide path gives expf's bits here: 65,536 inputs over expf's whole range of results (and its special
// values) against the C library. glibc runs its FMA build only where the CPU reports AVX2 and FMA and no tunable
// (GLIBC_TUNABLES) masks them; elsewhere its other build can round otherwise.
#ifdef VOXMILL_EXPF_X86
static inline bool voxmill_expf_agrees() {
  constexpr int kInputs = 65536;
  constexpr int kBlock = 256;
  for (int first = 0; first < kInputs; first += kBlock) {
    float x[kBlock], y[kBlock];
    for (int i = 0; i < kBlock; ++i) x[i] = -104.0f + 193.0f * static_cast<float>(first + i) / kInputs;
    if (first == 0) {
      x[0] = -INFINITY;
      x[1] = INFINITY;
      x[2] = NAN;
      x[3] = -0.0f;
    }
    voxmill_expf_avx2(x, y, kBlock);
    for (int i = 0; i < kBlock; ++i) {
      const float expected = expf(x[i]);
      if (memcmp(&expected, &y[i], sizeof expected) != 0) return false;
    }
  }
  return true;
}
#endif

// Whether voxmill_expf_array and voxmill_log_softmax take the four-wide path: glibc on x86-64 with AVX2 and FMA, where
// the path agrees with expf (checked once). `has_avx2_fma` is the caller's reading of the CPU (ggml's, in whisper.cpp).
static inline bool voxmill_expf_vectorized(bool has_avx2_fma) {
#ifdef VOXMILL_EXPF_X86
  return has_avx2_fma && voxmill_expf_agrees();
#else
  (void)has_avx2_fma;
  return false;
#endif
}

// y[i] = expf(x[i] - max) where x[i] > -inf (NaN not), else 0, for i < n; returns the sum of the y[i] in order, in
// float: the log-softmax's normalizer as whisper.cpp sums it.
static inline float voxmill_expf_shifted_sum(const float* x, float max, float* y, int n, bool vectorized) {
#ifdef VOXMILL_EXPF_X86
  if (vectorized) return voxmill_expf_shifted_sum_avx2(x, max, y, n);
#else
  (void)vectorized;
#endif
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    y[i] = x[i] > -INFINITY ? expf(x[i] - max) : 0.0f;
    sum += y[i];
  }
  return sum;
}

// The largest of x[0..n) where the vector path can tell it (no NaN among them, the largest not zero), else NAN; NAN
// always off that path, so that callers keep their full loops there.
static inline float voxmill_max_or_nan(const float* x, int n, bool vectorized) {
#ifdef VOXMILL_EXPF_X86
  if (vectorized) return voxmill_max_avx2(x, n);
#else
  (void)x;
  (void)n;
  (void)vectorized;
#endif
  return NAN;
}

// std::max_element's value: the first x[i] that no later one compares above (n > 0).
static inline float voxmill_first_max(const float* x, int n) {
  const float* largest = x;
  for (int i = 1; i < n; ++i) {
    if (*largest < x[i]) largest = x + i;
  }
  return *largest;
}

// std::max_element's value (n > 0), eight at a time where the vector maximum tells it.
static inline float voxmill_max_element(const float* x, int n, bool vectorized) {
  const float max = voxmill_max_or_nan(x, n, vectorized);
  return max == max ? max : voxmill_first_max(x, n);
}

// whisper.cpp's log-softmax (whisper_compute_logprobs) with the same bits: the largest of x[0..n_max)
// (std::max_element's value), the sum of expf(x[i] - max) over x[i] > -inf in order, then y[i] = x[i] - (logf(sum) +
// max) or -inf, for i < n. y may not be x.
static inline void voxmill_log_softmax(const float* x, int n_max, float* y, int n, bool vectorized) {
  const float max = voxmill_max_element(x, n_max, vectorized);
#ifdef VOXMILL_EXPF_X86
  if (vectorized) {
    const float sum = voxmill_expf_shifted_sum_avx2(x, max, y, n);
    voxmill_subtract_finite_avx2(x, logf(sum) + max, y, n);
    return;
  }
#endif
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (x[i] > -INFINITY) sum += expf(x[i] - max);
  }
  const float shift = logf(sum) + max;
  for (int i = 0; i < n; ++i) y[i] = x[i] > -INFINITY ? x[i] - shift : -INFINITY;
}

// y[i] = expf(x[i]) for i < n (x and y may be the same array).
static inline void voxmill_expf_array(const float* x, float* y, int n, bool vectorized) {
#ifdef VOXMILL_EXPF_X86
  if (vectorized) {
    voxmill_expf_avx2(x, y, n);
    return;
  }
#else
  (void)vectorized;
#endif
  for (int i = 0; i < n; ++i) y[i] = expf(x[i]);
}

// The first i in [from, n) with x[i] >= floor, or n (a NaN never counts).
static inline int voxmill_find_at_least(const float* x, int from, int n, float floor, bool vectorized) {
  int i = from;
#ifdef VOXMILL_EXPF_X86
  if (vectorized) i = voxmill_skip_below_avx2(x, from, n, floor);
#else
  (void)vectorized;
#endif
  for (; i < n; ++i) {
    if (x[i] >= floor) return i;
  }
  return n;
}

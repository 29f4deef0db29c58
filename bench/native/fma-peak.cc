// The CPU's single-thread FP32 multiply-add peak: independent chains of fused multiply-adds, enough of them in flight
// to cover the FMA latency on every pipe. Compiled twice by bench/cpu-peak.mjs: with -mavx2 -mfma it measures 8-lane
// (AVX2) FMAs, with -mavx512f 16-lane (AVX-512) ones. Prints one JSON line: the best GFLOP/s of a few rounds.
#include <immintrin.h>

#include <chrono>
#include <cstdio>

#if defined(__AVX512F__)
using Vector = __m512;
constexpr int kLanes = 16;
constexpr const char* kName = "avx512";
inline Vector Fma(Vector a, Vector b, Vector c) { return _mm512_fmadd_ps(a, b, c); }
inline Vector Splat(float x) { return _mm512_set1_ps(x); }
// 32 vector registers: 16 chains and the two constants all stay in registers.
constexpr int kChains = 16;
#else
using Vector = __m256;
constexpr int kLanes = 8;
constexpr const char* kName = "avx2";
inline Vector Fma(Vector a, Vector b, Vector c) { return _mm256_fmadd_ps(a, b, c); }
inline Vector Splat(float x) { return _mm256_set1_ps(x); }
// 16 vector registers: 16 chains and a constant do not fit, and the chain the compiler spills to memory paces the
// whole loop (52.2 GFLOP/s measured on a Zen 3 with 16 chains, 91.3-93.7 with 8-14). 12 chains still cover two
// pipes of 4- and 5-cycle FMAs.
constexpr int kChains = 12;
#endif

namespace {

double Gflops(long iterations) {
  Vector acc[kChains];
  for (int i = 0; i < kChains; i++) acc[i] = Splat(1.0f + static_cast<float>(i) * 1e-7f);
  const Vector scale = Splat(0.9999999f);
  const Vector add = Splat(1e-7f);
  const auto start = std::chrono::steady_clock::now();
  for (long n = 0; n < iterations; n++) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; i++) acc[i] = Fma(acc[i], scale, add);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  float sink = 0;
  for (int i = 0; i < kChains; i++) sink += reinterpret_cast<float*>(&acc[i])[0];
  if (sink == 12345.0f) std::puts("");  // keeps the chains alive
  return 2.0 * kLanes * kChains * static_cast<double>(iterations) / seconds / 1e9;
}

}  // namespace

int main() {
  double best = 0;
  for (int round = 0; round < 5; round++) {
    const double gflops = Gflops(400'000'000 / kLanes);
    if (gflops > best) best = gflops;
  }
  std::printf("{\"isa\":\"%s\",\"gflops\":%.1f}\n", kName, best);
  return 0;
}

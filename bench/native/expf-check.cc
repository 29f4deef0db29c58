// native/voxmill_expf.h against the C library's expf, over every float (whisper.cpp patch 0020's check), and the
// speed of both over a vocabulary-sized array.
//
//   g++ -O2 -std=c++17 -Inative bench/native/expf-check.cc -o /tmp/expf-check -lpthread
//   /tmp/expf-check [--speed]
//
// Compares the bits of the four-wide path's result (computed in place) with expf's for all 2^32 inputs (NaNs
// included), split over the machine's threads, and exits 1 naming the first input that differs (whisper.cpp would
// still be safe: its one-time self-test, voxmill_expf_agrees, falls back to expf, but the claim of patch 0020 would not
// hold on this machine). Exits 0 with "scalar only" where the four-wide path cannot run (no AVX2 and FMA, not x86-64,
// not glibc): voxmill_expf_array is then expf itself. --speed also times both
// over 51,864 values of the log-softmax's range, as whisper.cpp's decoders call them.
#include <math.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "voxmill_expf.h"

namespace {

bool CpuHasAvx2Fma() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Checks inputs [first, last) (as bit patterns); returns the first that differs, or `last`.
uint64_t CheckRange(uint64_t first, uint64_t last, bool vectorized) {
  constexpr int kBlock = 4096;
  std::vector<float> x(kBlock), y(kBlock);
  for (uint64_t start = first; start < last; start += kBlock) {
    const int n = static_cast<int>(std::min<uint64_t>(kBlock, last - start));
    for (int i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(start + i);
      std::memcpy(&x[i], &bits, sizeof bits);
    }
    // In place, which also covers one array into another (whisper.cpp's calls): the special lanes are recomputed from
    // the loaded values, not re-read.
    std::copy(x.begin(), x.begin() + n, y.begin());
    voxmill_expf_array(y.data(), y.data(), n, vectorized);
    for (int i = 0; i < n; ++i) {
      if (Bits(y[i]) != Bits(expf(x[i]))) return start + i;
    }
  }
  return last;
}

void Speed(bool vectorized) {
  constexpr int kValues = 51864;
  std::vector<float> x(kValues), y(kValues);
  for (int i = 0; i < kValues; ++i) x[i] = -30.0f * static_cast<float>(i) / kValues;  // logits less their maximum
  const auto time = [&](bool vector) {
    double best = 1e30;
    for (int run = 0; run < 50; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      voxmill_expf_array(x.data(), y.data(), kValues, vector);
      const auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return best;
  };
  std::printf("51864 values: expf %.1f us, four-wide %.1f us (best of 50)\n", time(false),
              vectorized ? time(true) : time(false));
  // The log-softmax's normalizer: upstream's loop against the fused four-wide form.
  const auto time_sum = [&](bool vector) {
    double best = 1e30;
    volatile float sink = 0.0f;
    for (int run = 0; run < 50; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      sink = voxmill_expf_shifted_sum(x.data(), 0.0f, y.data(), kValues, vector);
      const auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    (void)sink;
    return best;
  };
  std::printf("51864 values, exponentials summed in order: expf %.1f us, four-wide %.1f us (best of 50)\n",
              time_sum(false), vectorized ? time_sum(true) : time_sum(false));
}

}  // namespace

int main(int argc, char** argv) {
#ifdef VOXMILL_EXPF_X86
  const bool vectorized = CpuHasAvx2Fma();
#else
  const bool vectorized = false;
#endif
  if (argc > 1 && std::strcmp(argv[1], "--speed") == 0) Speed(vectorized);
  if (!vectorized) {
    std::printf("scalar only (no AVX2 and FMA here, not x86-64 or not glibc): nothing to compare\n");
    return 0;
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  constexpr uint64_t kAll = uint64_t{1} << 32;
  std::vector<uint64_t> found(threads, kAll);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const uint64_t first = kAll / threads * t;
      const uint64_t last = t + 1 == threads ? kAll : kAll / threads * (t + 1);
      const uint64_t at = CheckRange(first, last, true);
      found[t] = at == last ? kAll : at;
    });
  }
  for (auto& worker : workers) worker.join();
  // The log-softmax's fused form: the same values and the same float sum, in order, as the scalar loop.
  {
    std::vector<float> x(51867), a(x.size()), b(x.size());
    uint32_t state = 12345;
    for (size_t i = 0; i < x.size(); ++i) {
      state = state * 1664525u + 1013904223u;
      x[i] = i % 97 == 0 ? -INFINITY : i % 211 == 0 ? NAN : static_cast<float>(state >> 8) / (1 << 24) * 120.0f - 60.0f;
    }
    float max = -INFINITY;
    for (const float value : x) max = value > max ? value : max;
    const float fused = voxmill_expf_shifted_sum(x.data(), max, a.data(), static_cast<int>(x.size()), true);
    const float plain = voxmill_expf_shifted_sum(x.data(), max, b.data(), static_cast<int>(x.size()), false);
    if (Bits(fused) != Bits(plain) || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0) {
      std::printf("the shifted sum differs: four-wide %a, scalar %a\n", fused, plain);
      return 1;
    }
    // The whole log-softmax: logits with -inf and NaN among them, a largest of +0 after -0, none of either.
    for (int variant = 0; variant < 4; ++variant) {
      std::vector<float> logits = x;
      if (variant >= 1) {
        for (float& value : logits) value = value != value ? -INFINITY : value;
      }
      if (variant == 2) {
        for (float& value : logits) value = value > 0.0f ? -value : value;
        logits[5] = -0.0f;
        logits[900] = 0.0f;
      }
      if (variant == 3) logits[0] = NAN;
      voxmill_log_softmax(logits.data(), static_cast<int>(logits.size()), a.data(), static_cast<int>(logits.size()), true);
      voxmill_log_softmax(logits.data(), static_cast<int>(logits.size()), b.data(), static_cast<int>(logits.size()),
                          false);
      if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0) {
        std::printf("the log-softmax differs (case %d)\n", variant);
        return 1;
      }
    }
  }
  const uint64_t first_bad = *std::min_element(found.begin(), found.end());
  if (first_bad != kAll) {
    float x;
    const uint32_t bits = static_cast<uint32_t>(first_bad);
    std::memcpy(&x, &bits, sizeof x);
    float four[4] = {x, x, x, x}, y[4];
    voxmill_expf_array(four, y, 4, true);
    std::printf("differs at 0x%08x (%a): expf %a, four-wide %a\n", bits, x, expf(x), y[0]);
    return 1;
  }
  std::printf("all 2^32 inputs: the same bits as expf (%u threads)\n", threads);
  return 0;
}

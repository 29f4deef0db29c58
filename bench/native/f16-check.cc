// native/voxmill_f16.h against ggml's scalar loops, over every float (whisper.cpp patches 0022 and 0023's check).
//
//   WHISPER=node_modules/whisper-cpp-src/cpp/whisper.cpp
//   g++ -O2 -march=native -std=c++17 -Inative -I$WHISPER/ggml/include -I$WHISPER/ggml/src
//     bench/native/f16-check.cc -o /tmp/f16-check -lpthread
//   /tmp/f16-check [--stride N]
//
// The references are ggml's loops as an x86 build runs them: its own f32 -> f16 conversion
// (ggml_compute_fp32_to_fp16, which ggml-cpu uses on x86 even with F16C) for the row conversion (0023), and for the
// GELU (vec.h with GGML_GELU_FP16, 0022) that conversion, a table built as ggml_cpu_init builds its own and the
// widening its f32 table holds (ggml_compute_fp16_to_fp32). Compares the bits of every result, NaNs included, split
// over the machine's threads, and exits 1 naming the first input that differs. --stride N checks 1 in N inputs only
// (CI's soak tier; all 2^32 take about 15 s of two cores). Exits 0 with "scalar only" where the header's vector paths
// are not compiled (no AVX2 and F16C in -march) or the CPU lacks them.
#include <math.h>

#include <cmath>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ggml-impl.h"
#include "voxmill_f16.h"

namespace {

uint16_t table[1 << 16];

// ggml_cpu_init's table: the tanh GELU of every f16, rounded to f16.
void BuildTable() {
  for (uint32_t h = 0; h < (1u << 16); ++h) {
    const float x = ggml_compute_fp16_to_fp32(static_cast<ggml_fp16_t>(h));
    const float gelu = 0.5f * x * (1.0f + tanhf(0.79788456080286535587989211986876f * x * (1.0f + 0.044715f * x * x)));
    table[h] = ggml_compute_fp32_to_fp16(gelu);
  }
}

// ggml_vec_gelu_f32 with GGML_GELU_FP16, as on x86.
void Reference(const int n, float* y, const float* x) {
  for (int i = 0; i < n; ++i) {
    if (x[i] <= -10.0f) {
      y[i] = 0.0f;
    } else if (x[i] >= 10.0f) {
      y[i] = x[i];
    } else {
      y[i] = ggml_compute_fp16_to_fp32(table[ggml_compute_fp32_to_fp16(x[i])]);
    }
  }
}

// ggml's f32 -> f16 row loop (ops.cpp's dup, type_conversion_table<ggml_fp16_t>), as on x86.
void ReferenceRow(const int n, uint16_t* y, const float* x) {
  for (int i = 0; i < n; ++i) y[i] = ggml_compute_fp32_to_fp16(x[i]);
}

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

#ifdef VOXMILL_F16_VECTORIZED
// Checks 1 in `stride` inputs of [first, last) (bit patterns, in blocks of consecutive ones); the first that
// differs in either kernel, or `last`.
uint64_t CheckRange(uint64_t first, uint64_t last, uint64_t stride) {
  constexpr int kBlock = 4096;
  std::vector<float> x(kBlock), y(kBlock), expected(kBlock);
  std::vector<uint16_t> h(kBlock), expected_h(kBlock);
  for (uint64_t start = first; start < last; start += kBlock * stride) {
    const int n = static_cast<int>(std::min<uint64_t>(kBlock, (last - start + stride - 1) / stride));
    for (int i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(start + i * stride);
      std::memcpy(&x[i], &bits, sizeof bits);
    }
    Reference(n, expected.data(), x.data());
    ReferenceRow(n, expected_h.data(), x.data());
    // The kernels hand the scalar loop only blocks of eight holding a NaN and the last n % 8 values; a block without
    // one reaching it means the vector path did not run, which comparing results alone would not show.
    bool misrouted = false;
    const auto holds_nan = [](int count, const float* values) {
      for (int i = 0; i < count; ++i) {
        if (std::isnan(values[i])) return true;
      }
      return false;
    };
    voxmill_gelu_f16_table(n, y.data(), x.data(), table, [&](int count, float* out, const float* in) {
      misrouted |= count == 8 && !holds_nan(count, in);
      Reference(count, out, in);
    });
    voxmill_fp32_to_fp16_row(n, h.data(), x.data(), [&](int count, uint16_t* out, const float* in) {
      misrouted |= count == 8 && !holds_nan(count, in);
      ReferenceRow(count, out, in);
    });
    if (misrouted) {
      std::printf("the scalar loop got a block of eight without a NaN, from 0x%08llx on: the vector path did not run\n",
                  static_cast<unsigned long long>(start));
      std::exit(1);
    }
    for (int i = 0; i < n; ++i) {
      if (Bits(y[i]) != Bits(expected[i]) || h[i] != expected_h[i]) return start + i * stride;
    }
  }
  return last;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  uint64_t stride = 1;
  if (argc == 3 && std::strcmp(argv[1], "--stride") == 0) {
    stride = std::strtoull(argv[2], nullptr, 10);
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: f16-check [--stride N]\n");
    return 2;
  }
  if (stride < 1) stride = 1;
#ifdef VOXMILL_F16_VECTORIZED
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) {
    std::printf("scalar only: this CPU has no AVX2 and F16C\n");
    return 0;
  }
  BuildTable();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t total = uint64_t{1} << 32;
  // Each thread takes a contiguous share, a whole number of stride-blocks long, so together they sample one grid.
  const uint64_t share = ((total / threads) / (4096 * stride) + 1) * 4096 * stride;
  std::vector<uint64_t> found(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const uint64_t first = std::min(total, t * share);
      const uint64_t last = std::min(total, first + share);
      found[t] = first < last ? CheckRange(first, last, stride) : last;
      if (found[t] == last) found[t] = total;
    });
  }
  for (auto& worker : workers) worker.join();
  const uint64_t first_bad = *std::min_element(found.begin(), found.end());
  if (first_bad != total) {
    const uint32_t bits = static_cast<uint32_t>(first_bad);
    float x;
    std::memcpy(&x, &bits, sizeof x);
    float expected, got;
    Reference(1, &expected, &x);
    float block[8] = {x, x, x, x, x, x, x, x};
    float out[8];
    voxmill_gelu_f16_table(8, out, block, table, Reference);
    got = out[0];
    uint16_t expected_h, got_h[8];
    ReferenceRow(1, &expected_h, &x);
    voxmill_fp32_to_fp16_row(8, got_h, block, ReferenceRow);
    std::printf("differs at 0x%08x (%.9g): GELU expected 0x%08x, got 0x%08x; f16 expected 0x%04x, got 0x%04x\n", bits,
                x, Bits(expected), Bits(got), expected_h, got_h[0]);
    return 1;
  }
  if (stride == 1) {
    std::printf("all 2^32 inputs: the same bits as ggml's scalar GELU and f16 conversion\n");
  } else {
    std::printf("1 in %llu of the 2^32 inputs: the same bits as ggml's scalar GELU and f16 conversion\n",
                static_cast<unsigned long long>(stride));
  }
  return 0;
#else
  std::printf("scalar only: native/voxmill_f16.h's vector paths are not compiled for this target\n");
  return 0;
#endif
}

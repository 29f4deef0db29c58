// Few-column f16 products with AVX-512, with and without prefetching the weight rows ahead (patches 0028 and 0029).
//
//   g++ -O3 -march=native -std=c++17 bench/native/few-column-prefetch.cc -o /tmp/few-column-prefetch -lpthread
//   /tmp/few-column-prefetch ROWS INNER [COPIES=3] [THREADS=2] [ROWS_AHEAD=8] [RUNS=9]
//
// Computes C = A x B for an f16 matrix A (ROWS x INNER, COPIES distinct copies one after another, so that a run streams
// them from memory as a decoder step streams its weights) and 5 columns B (a beam-5 step), each thread taking an equal
// share of the rows, with tinyBLAS's AVX-512 tile loop: for each step of 16 values, load and convert the tile's rows
// and columns, one fused multiply-add per output, a horizontal sum at the end. Prints the best of RUNS for each plan in
// ms and GB/s of A read, with a plain read of the same bytes as the ceiling:
//   read          the bytes of A summed as integers, nothing else
//   4x5           upstream's tiles (4 rows x 5 columns)
//   4x5 pf L1/L2  the same, prefetching each 64-byte line of the rows ROWS_AHEAD rows on, into L1 (locality 3,
//                 prefetcht0) or into L2 (locality 2, prefetcht1: patch 0028's)
//   4x5 pf L2 b32 the same with B converted to f32 once, outside the loop (if this gains, the tiles are bound by
//                 converting, not by memory)
//   1x5, 1x5 pf L2, 2x5 pf L2  other tile heights
// Each timed run starts and joins its threads, so a case of about a millisecond carries that start-up in every plan.
// Needs AVX-512F (exits with 2 without it). Every plan's outputs are checked equal to the first plan's, bit for bit
// except the b32 plan (its columns are the same values, so its sums are too).
// Cases of BENCHMARKS.md "Patches 0028 and 0029": 51864 384 (tiny.en's vocabulary), 51864 512 2 (base's), 2048 512 20.
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#ifndef __AVX512F__
int main() {
  std::fprintf(stderr, "built without AVX-512F (-march=native on a CPU without it)\n");
  return 2;
}
#else

using half = uint16_t;
constexpr int COLUMNS = 5;

static inline __m512 load_half16(const half *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }

// Rows [r0, r1) of A (row length k) against the 5 columns; C holds COLUMNS x rows, column-major.
template <int RM, int LOCALITY, bool B_F32>
void tiles(const half *A, int64_t r0, int64_t r1, int64_t rows, int k, const half *Bh, const float *Bf, float *C,
           int64_t ahead) {
  int64_t ii = r0;
  for (; ii + RM <= r1; ii += RM) {
    __m512 acc[COLUMNS][RM];
    for (auto &column : acc)
      for (auto &a : column) a = _mm512_setzero_ps();
    for (int l = 0; l < k; l += 16) {
      __m512 a[RM];
      for (int i = 0; i < RM; ++i) {
        const half *p = A + (ii + i) * k + l;
        if constexpr (LOCALITY >= 0) {
          if (l % 32 == 0) __builtin_prefetch(p + ahead * k, 0, LOCALITY);
        }
        a[i] = load_half16(p);
      }
      for (int j = 0; j < COLUMNS; ++j) {
        const __m512 b = B_F32 ? _mm512_loadu_ps(Bf + j * k + l) : load_half16(Bh + j * k + l);
        for (int i = 0; i < RM; ++i) acc[j][i] = _mm512_fmadd_ps(a[i], b, acc[j][i]);
      }
    }
    for (int j = 0; j < COLUMNS; ++j)
      for (int i = 0; i < RM; ++i) C[j * rows + ii + i] = _mm512_reduce_add_ps(acc[j][i]);
  }
  if (ii < r1) tiles<1, LOCALITY, B_F32>(A, ii, r1, rows, k, Bh, Bf, C, ahead);
}

static float read_all(const half *A, int64_t n) {
  __m512i sum = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) sum = _mm512_add_epi32(sum, _mm512_loadu_si512(A + i));
  int64_t rest = 0;
  for (; i < n; ++i) rest += A[i];
  return (float)(_mm512_reduce_add_epi32(sum) + rest);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ROWS INNER [COPIES] [THREADS] [ROWS_AHEAD] [RUNS]\n", argv[0]);
    return 2;
  }
  const int64_t rows = std::atoll(argv[1]);
  const int k = std::atoi(argv[2]);
  const int copies = argc > 3 ? std::atoi(argv[3]) : 3;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  const int64_t ahead = argc > 5 ? std::atoll(argv[5]) : 8;
  const int runs = argc > 6 ? std::atoi(argv[6]) : 9;
  if (rows < threads || k % 32 != 0 || copies < 1 || threads < 1 || ahead < 0 || runs < 1) {
    std::fprintf(stderr, "INNER must be a multiple of 32, ROWS at least THREADS\n");
    return 2;
  }
  std::vector<half> A(rows * k * copies);
  for (size_t i = 0; i < A.size(); ++i) A[i] = (half)(0x3800 + (i * 2654435761u >> 22) % 0x400);  // [0.5, 1)
  std::vector<half> Bh(COLUMNS * k);
  std::vector<float> Bf(COLUMNS * k);
  for (int i = 0; i < COLUMNS * k; ++i) {
    Bh[i] = (half)(0x3000 + (i * 40503u) % 0x400);  // [0.125, 0.25)
    Bf[i] = _cvtsh_ss(Bh[i]);
  }
  using Plan = std::function<void(const half *, int64_t, int64_t, float *)>;
  const auto plan = [&](auto fn) -> Plan {
    return [&, fn](const half *a, int64_t r0, int64_t r1, float *c) {
      fn(a, r0, r1, rows, k, Bh.data(), Bf.data(), c, ahead);
    };
  };
  const std::vector<std::pair<std::string, Plan> > plans = {
      {"4x5", plan(tiles<4, -1, false>)},      {"4x5 pf L1", plan(tiles<4, 3, false>)},
      {"4x5 pf L2", plan(tiles<4, 2, false>)}, {"4x5 pf L2 b32", plan(tiles<4, 2, true>)},
      {"1x5", plan(tiles<1, -1, false>)},      {"1x5 pf L2", plan(tiles<1, 2, false>)},
      {"2x5 pf L2", plan(tiles<2, 2, false>)},
  };
  const double bytes = (double)rows * k * copies * sizeof(half);
  const auto time_best = [&](const std::function<void(int)> &work) {
    double best = 1e30;
    for (int run = 0; run < runs; ++run) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
      for (auto &thread : pool) thread.join();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
  };
  const auto share = [&](int t, int64_t &r0, int64_t &r1) {
    r0 = rows * t / threads;
    r1 = rows * (t + 1) / threads;
  };
  std::vector<float> sink(threads);
  const double read_s = time_best([&](int t) {
    int64_t r0, r1;
    share(t, r0, r1);
    for (int c = 0; c < copies; ++c) sink[t] += read_all(A.data() + (c * rows + r0) * k, (r1 - r0) * k);
  });
  std::printf("%lld x %d, %d copies, %d threads, rows ahead %lld\n", (long long)rows, k, copies, threads,
              (long long)ahead);
  std::printf("%-14s %8.3f ms %6.1f GB/s\n", "read", read_s * 1e3, bytes / read_s / 1e9);
  std::vector<float> first;
  for (const auto &[name, fn] : plans) {
    std::vector<float> C((size_t)COLUMNS * rows * copies);
    const double s = time_best([&](int t) {
      int64_t r0, r1;
      share(t, r0, r1);
      for (int c = 0; c < copies; ++c) fn(A.data() + c * rows * k, r0, r1, C.data() + (size_t)c * COLUMNS * rows);
    });
    std::printf("%-14s %8.3f ms %6.1f GB/s\n", name.c_str(), s * 1e3, bytes / s / 1e9);
    if (first.empty()) {
      first = C;
    } else if (std::memcmp(first.data(), C.data(), C.size() * sizeof(float)) != 0) {
      std::fprintf(stderr, "%s: outputs differ from %s's\n", name.c_str(), plans[0].first.c_str());
      return 1;
    }
  }
  return 0;
}
#endif

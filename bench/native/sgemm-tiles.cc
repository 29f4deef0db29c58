// Tile shapes for f16 products of a few columns, with the weights streamed from memory (patch 0017's measurements).
//
//   g++ -O3 -march=native -std=c++17 bench/native/sgemm-tiles.cc -o /tmp/sgemm-tiles -lpthread
//   /tmp/sgemm-tiles ROWS INNER [COPIES=1] [ROW_STRIDE=INNER] [THREADS=2] [RUNS=9]
//
// Computes C = A x B for an f16 matrix A (ROWS x INNER, rows ROW_STRIDE halves apart, COPIES distinct copies one
// after another, so that a run streams them from memory as a decoder step does) and 5 (or 4) f16 columns B, with the
// tile loop llamafile's tinyBLAS uses on 16-register x64 builds (AVX2 + F16C + FMA): for each step of 8 values, load
// and convert the tile's rows and columns, one fused multiply-add per output, a horizontal sum at the end. Prints the
// best of RUNS for each tile plan, in ms. The plans differ only in which outputs share a pass over A; each output's
// arithmetic is the same, which the program checks (every plan's C must equal the first plan's bit for bit).
// Cases of BENCHMARKS.md "Patch 0017": 51864 384 / 51864 512 (vocabulary), 512 512 36, 2048 512 40, 1536 384 50,
// 1504 64 48 512 (cross-attention scores), and 16384 64 20 / 8192 128 20 / 4096 256 20 / 2730 384 20.
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

using half = uint16_t;

static inline __m256 load_half8(const half * p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) p)); }

static inline float hsum(__m256 x) {
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}

// RM rows of A against RN columns of B, starting at row ii and column jj (C is column-major with ldc = rows).
template <int RM, int RN>
__attribute__((noinline)) void tile(int k, const half * A, int64_t lda, const half * B, int ldb, float * C, int64_t ldc,
                                    int64_t ii, int jj) {
    __m256 acc[RN][RM] = {};
    for (int l = 0; l < k; l += 8) {
        if constexpr (RM <= RN) {
            __m256 a[RM];
            for (int i = 0; i < RM; ++i) a[i] = load_half8(A + lda * (ii + i) + l);
            for (int j = 0; j < RN; ++j) {
                const __m256 b = load_half8(B + ldb * (jj + j) + l);
                for (int i = 0; i < RM; ++i) acc[j][i] = _mm256_fmadd_ps(a[i], b, acc[j][i]);
            }
        } else {
            __m256 b[RN];
            for (int j = 0; j < RN; ++j) b[j] = load_half8(B + ldb * (jj + j) + l);
            for (int i = 0; i < RM; ++i) {
                const __m256 a = load_half8(A + lda * (ii + i) + l);
                for (int j = 0; j < RN; ++j) acc[j][i] = _mm256_fmadd_ps(a, b[j], acc[j][i]);
            }
        }
    }
    for (int j = 0; j < RN; ++j)
        for (int i = 0; i < RM; ++i) C[ldc * (jj + j) + ii + i] = hsum(acc[j][i]);
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s ROWS INNER [COPIES] [ROW_STRIDE] [THREADS] [RUNS]\n", argv[0]);
        return 2;
    }
    const int64_t rows = std::atoll(argv[1]);
    const int k = std::atoi(argv[2]);
    const int copies = argc > 3 ? std::atoi(argv[3]) : 1;
    const int64_t lda = argc > 4 ? std::atoll(argv[4]) : k;
    const int threads = argc > 5 ? std::atoi(argv[5]) : 2;
    const int runs = argc > 6 ? std::atoi(argv[6]) : 9;
    if (rows % 4 != 0 || k % 8 != 0 || lda < k || copies < 1 || threads < 1 || runs < 1) {
        std::fprintf(stderr, "ROWS must be a multiple of 4, INNER of 8, ROW_STRIDE >= INNER\n");
        return 2;
    }
    const int64_t all_rows = rows * copies;
    std::vector<half> A(all_rows * lda), B(6 * k);
    std::vector<float> C(6 * all_rows), first;
    std::mt19937 gen(1);
    std::normal_distribution<float> dist(0.0f, 0.1f);
    for (auto & a : A) a = _cvtss_sh(dist(gen), 0);
    for (auto & b : B) b = _cvtss_sh(dist(gen), 0);

    // Each thread takes its share (a multiple of 4 rows) of every copy in turn.
    using Plan = std::function<void(int64_t, int64_t)>;
    const auto run = [&](const char * name, int columns, const Plan & plan) {
        double best = 1e30;
        for (int r = 0; r < runs; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<std::thread> pool;
            for (int t = 0; t < threads; ++t) {
                pool.emplace_back([&, t] {
                    for (int c = 0; c < copies; ++c) {
                        const int64_t r0 = (rows * t / threads) & ~int64_t(3);
                        const int64_t r1 = t == threads - 1 ? rows : (rows * (t + 1) / threads) & ~int64_t(3);
                        plan(c * rows + r0, c * rows + r1);
                    }
                });
            }
            for (auto & th : pool) th.join();
            best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        const std::vector<float> out(C.begin(), C.begin() + columns * all_rows);
        const char * same = "";
        if (columns == 5) {
            if (first.empty()) first = out;
            same = std::memcmp(first.data(), out.data(), out.size() * sizeof(float)) == 0 ? "" : "  DIFFERENT OUTPUT";
        }
        std::printf("%-24s %9.3f ms%s\n", name, best, same);
    };
    const half * a = A.data();
    const half * b = B.data();
    float * c = C.data();
    const int64_t ldc = all_rows;
    run("5 cols: 4x3 + 4x2", 5, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; i += 4) { tile<4, 3>(k, a, lda, b, k, c, ldc, i, 0); tile<4, 2>(k, a, lda, b, k, c, ldc, i, 3); }
    });
    run("5 cols: 1x5", 5, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) tile<1, 5>(k, a, lda, b, k, c, ldc, i, 0);
    });
    run("5 cols: 2x5", 5, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; i += 2) tile<2, 5>(k, a, lda, b, k, c, ldc, i, 0);
    });
    run("5 cols: 3x5", 5, [&](int64_t r0, int64_t r1) {
        int64_t i = r0;
        for (; i + 3 <= r1; i += 3) tile<3, 5>(k, a, lda, b, k, c, ldc, i, 0);
        for (; i < r1; ++i) tile<1, 5>(k, a, lda, b, k, c, ldc, i, 0);
    });
    run("4 cols: 4x2 + 4x2", 4, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; i += 4) { tile<4, 2>(k, a, lda, b, k, c, ldc, i, 0); tile<4, 2>(k, a, lda, b, k, c, ldc, i, 2); }
    });
    run("4 cols: 1x4", 4, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) tile<1, 4>(k, a, lda, b, k, c, ldc, i, 0);
    });
    return 0;
}

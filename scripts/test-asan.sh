#!/usr/bin/env bash
# Builds the addon with AddressSanitizer into build-asan/ (build/Release is left alone) and runs the native
# test files (test/native/) against it. Fails on any ASan report from any process of the run.
#
#   bash scripts/test-asan.sh [vitest filters...]     default: test/native/
#
# How: the addon and whisper.cpp (linked in statically) are compiled by g++ with -fsanitize=address (the targets
# and the one left out, ggml's CPU kernels, are in scripts/asan.cmake; it needs CMake 3.19+);
# node itself is not instrumented, so gcc's libasan is LD_PRELOADed (it must be the first library loaded) and
# src/native.ts is pointed at the ASan build with VOXMILL_ADDON_PATH. FFmpeg (built in, scripts/static-ffmpeg.mjs) and ONNX
# Runtime (the package's library) are uninstrumented builds: their own out-of-bounds accesses are not seen, their heap misuse is. espeak-ng is
# compiled into the addon, and scripts/asan.cmake decides whether it is instrumented.
#
# Only test/native/ by default: those files drive the native code directly (decode, encode, VAD, whisper, the
# hardening cases). test/http and test/e2e reach the same native calls through more JavaScript and would only add
# time under ASan.
#
# Environment: VOXMILL_BUILD_JOBS (default: number of CPUs), VOXMILL_TEST_DATA (as for npm test), VOXMILL_CI_REPORTS
# (a folder: vitest's JSON report is written there as asan.json, for scripts/ci-summary.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."

out=build-asan
config=Release
jobs="${VOXMILL_BUILD_JOBS:-$(nproc)}"
whisper_dir="$(node -p "require('path').join(require('path').dirname(require.resolve('whisper-cpp-src/package.json')), 'cpp', 'whisper.cpp')")"
node_addon_api="$(node -p "require('path').dirname(require.resolve('node-addon-api/package.json'))")"
# ONNX Runtime and espeak-ng, as the addon builds with them (fetched and cached once): -D options for cmake-js.
mapfile -t native_deps < <(node scripts/native-deps.mjs | sed 's/^-D/--CD/')
# FFmpeg as the addon links it by default: built in from source (scripts/static-ffmpeg.mjs, cached).
native_deps+=("--CDVOXMILL_FFMPEG_DIR=$(node scripts/static-ffmpeg.mjs)")

echo "--- asan: building $out/$config/voxmill.node (log: $out/build.log)"
build_started=$SECONDS
mkdir -p "$out"
# scripts/asan.cmake adds -fsanitize=address to the targets worth checking (it says which and why).
# g++, so that the libasan to preload is gcc's (one ASan runtime per process; clang's and gcc's differ).
node node_modules/cmake-js/bin/cmake-js compile \
  --directory . --out "$out" --config "$config" --cc gcc --cxx g++ \
  "--CDWHISPER_CPP_DIR=$whisper_dir" "--CDNODE_ADDON_API_DIR=$node_addon_api" \
  "--CDCMAKE_PROJECT_voxmill_INCLUDE=$PWD/scripts/asan.cmake" "${native_deps[@]}" \
  --parallel "$jobs" >"$out/build.log" 2>&1 || {
  tail -n 60 "$out/build.log"
  echo "asan: the build failed (full log: $out/build.log)" >&2
  exit 1
}
addon="$PWD/$out/$config/voxmill.node"
[[ -f "$addon" ]] || {
  echo "asan: the build did not produce $addon" >&2
  exit 1
}
echo "asan build took $((SECONDS - build_started)) s"

libasan="$(g++ -print-file-name=libasan.so)"
[[ -f "$libasan" ]] || {
  echo "asan: gcc's libasan.so not found ($libasan)" >&2
  exit 1
}
reports="$PWD/$out/reports"
rm -rf "$reports"
mkdir -p "$reports"

# The fixtures the native tests read (made once; cheap when present).
node scripts/make-fixtures.mjs >/dev/null

echo "--- asan: native tests with $libasan preloaded"
tests_started=$SECONDS
# detect_leaks=0: node and V8 do not free everything at exit by design, so LeakSanitizer would report the
#   runtime's own allocations in every process; the decoder's leaks are checked by scripts/fuzz.sh, and the
#   tests bound native memory by RSS.
# quarantine_size_mb=16 (default 256): freed memory is held back to catch use-after-free, and 256 MB of it showed
#   up as RSS growth in the tests that bound memory (those moved to the soak tier, which this step does not run;
#   test/native keeps a few single-call bounds); 16 MB still catches a use soon after free.
# log_path: each process writes its report to its own file, so a report from any process (a forked vitest
#   worker, a worker thread's abort) is seen below even where the test itself does not fail on it.
report_args=()
[[ -n "${VOXMILL_CI_REPORTS:-}" ]] &&
  report_args=(--reporter=default --reporter=json "--outputFile.json=$VOXMILL_CI_REPORTS/asan.json")
set +e
LD_PRELOAD="$libasan" \
  ASAN_OPTIONS="detect_leaks=0:quarantine_size_mb=16:log_path=$reports/asan" \
  VOXMILL_ADDON_PATH="$addon" \
  node node_modules/vitest/vitest.mjs run --project native "${report_args[@]}" "${@:-test/native/}"
rc=$?
set -e
echo "asan native tests took $((SECONDS - tests_started)) s"

mapfile -t found < <(find "$reports" -type f | sort)
if ((${#found[@]} > 0)); then
  echo "--- asan: ${#found[@]} AddressSanitizer report(s):"
  for file in "${found[@]}"; do
    echo "=== $file"
    cat "$file"
  done
  exit 1
fi
if ((rc != 0)); then
  echo "asan: vitest failed (exit $rc) with no ASan report" >&2
  exit "$rc"
fi
echo "asan: no AddressSanitizer reports"

#!/usr/bin/env bash
# Coverage-guided fuzzing of the audio decoder (voxmill::DecodeAudio, native/audio_decode.cc) with libFuzzer,
# AddressSanitizer and UBSan, for a bounded time.
#
#   bash scripts/fuzz.sh [seconds [libFuzzer flags...]]     default 120 s; later flags override the ones below
#
# Needs clang with libFuzzer: bash scripts/setup-system.sh --fuzz. FFmpeg is the system's (not instrumented), so
# memory errors are caught where our code touches memory, FFmpeg's own only when they corrupt ours.
#
# Everything lands in build-fuzz/ (git-ignored):
#   decode_fuzzer  the binary; re-run one input with ./build-fuzz/decode_fuzzer FILE
#   corpus/        inputs that found new coverage; kept between runs, so later runs start further in
#   seeds/         the first 64 KiB of every clip in $VOXMILL_TEST_DATA/audio and test/fixtures/audio
#   crashes/       crash-*, leak-*, timeout-*, oom-* inputs of THIS run (emptied at the start)
#   fuzz.log       libFuzzer's full output
# Exits 1 when anything was found (the log's tail, with the stack, is printed), 2 on a setup problem.
#
# Environment: VOXMILL_TEST_DATA (default ../shared beside the checkout), CXX_FUZZ (default clang++).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-120}"
shift || true
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: scripts/fuzz.sh [seconds [libFuzzer flags...]]   (whole seconds, default 120)" >&2
  exit 2
fi
cxx="${CXX_FUZZ:-clang++}"
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cxx not found; install clang and libFuzzer with: bash scripts/setup-system.sh --fuzz" >&2
  exit 2
fi
out=build-fuzz
mkdir -p "$out/corpus" "$out/seeds" "$out/crashes"
rm -f "$out/crashes/"*

echo "--- fuzz: building $out/decode_fuzzer"
build_started=$SECONDS
ffmpeg_libs=(libavformat libavcodec libswresample libavutil)
# -fno-sanitize-recover: a UBSan finding must stop the run and leave an input, like an ASan one.
# -O1 -g: fast enough to fuzz, and stacks still name the line.
# shellcheck disable=SC2046 # pkg-config's flags are meant to split into words
"$cxx" -std=c++17 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  native/fuzz/decode_fuzzer.cc native/audio_decode.cc native/ffmpeg_log.cc \
  $(pkg-config --cflags "${ffmpeg_libs[@]}") $(pkg-config --libs "${ffmpeg_libs[@]}") \
  -o "$out/decode_fuzzer"
echo "fuzz build took $((SECONDS - build_started)) s"

# Seeds: real clips give the fuzzer valid headers of every container to mutate. Only their first 64 KiB
# (-max_len below): a header and some frames, so each run is milliseconds, not a whole clip's decode.
max_len=65536
rm -f "$out/seeds/"*
shared="${VOXMILL_TEST_DATA:-../shared}"
seeded=0
for dir in "$shared/audio" test/fixtures/audio; do
  [[ -d "$dir" ]] || continue
  for file in "$dir"/*.{wav,mp3,ogg,opus,flac,m4a,webm,aac,aiff,caf,au,mkv}; do
    [[ -f "$file" ]] || continue
    head -c "$max_len" "$file" >"$out/seeds/$(basename "$dir")-$(basename "$file")"
    seeded=$((seeded + 1))
  done
done
if ((seeded == 0)); then
  echo "fuzz: no seed clips found in $shared/audio or test/fixtures/audio; starting from an empty corpus" >&2
fi
echo "fuzz: $seeded seed files, $(find "$out/corpus" -type f | wc -l) corpus files from earlier runs"

echo "--- fuzz: running for $seconds s (log: $out/fuzz.log)"
run_started=$SECONDS
# -timeout: one input taking 10 s is a hang (a 64 KiB input decodes in milliseconds).
# -rss_limit_mb: an input that makes the decoder hold 2 GiB is a finding (the limit is 60 s of output).
# The corpus directory comes first: new coverage is written there, seeds are only read.
set +e
"$out/decode_fuzzer" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
  -dict=native/fuzz/decode.dict -artifact_prefix="$out/crashes/" -print_final_stats=1 "$@" \
  "$out/corpus" "$out/seeds" >"$out/fuzz.log" 2>&1
rc=$?
set -e
echo "fuzz run took $((SECONDS - run_started)) s"

# libFuzzer's last status line ("#N DONE cov: X ft: Y corp: ..." or the last before a crash) and final stats.
status_line="$(grep -E '^#[0-9]+.*cov: ' "$out/fuzz.log" | tail -n 1 || true)"
cov="$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$status_line")"
ft="$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$status_line")"
corp="$(sed -nE 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' <<<"$status_line")"
execs="$(sed -nE 's/^stat::number_of_executed_units: +([0-9]+)/\1/p' "$out/fuzz.log" | tail -n 1)"
execs="${execs:-$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$status_line")}"
peak="$(sed -nE 's/^stat::peak_rss_mb: +([0-9]+)/\1/p' "$out/fuzz.log" | tail -n 1)"
mapfile -t found < <(find "$out/crashes" -type f | sort)

echo "fuzz: executions ${execs:-?}, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}, peak RSS ${peak:-?} MB," \
  "findings ${#found[@]} (libFuzzer exit $rc)"
if ((rc != 0 || ${#found[@]} > 0)); then
  echo "--- fuzz: FOUND A PROBLEM; the end of $out/fuzz.log:"
  tail -n 80 "$out/fuzz.log"
  for file in "${found[@]}"; do echo "fuzz: input kept at $file (re-run: ./$out/decode_fuzzer $file)"; done
  exit 1
fi

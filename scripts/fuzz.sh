#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer, AddressSanitizer and UBSan, for a bounded time, of one of the native entry
# points that take input straight from users:
#   decode     (default) the audio decoder, voxmill::DecodeAudio (native/audio_decode.cc): uploads and files
#   phonemize  espeak-ng as the addon calls it, voxmill::Phonemize (native/phonemizer_core.cc): the text of every
#              synthesis, in several languages
#
#   VOXMILL_FUZZ_TARGET=decode|phonemize bash scripts/fuzz.sh [seconds [libFuzzer flags...]]
#                                        default 120 s; later flags override the ones below. CI passes -seed and
#                                        -runs. The runs still differ between machines: libFuzzer sorts seeds by size
#                                        alone, so equal-sized ones run in the order the file system lists them, and
#                                        each run's path branches from there (CI prints a finding's input at its end)
#
# Needs clang with libFuzzer: bash scripts/setup-system.sh --fuzz. FFmpeg is the one the addon links (the static build
# of scripts/static-ffmpeg.mjs; VOXMILL_FFMPEG=system for the system's), not instrumented, so memory errors are caught
# where our code touches memory, FFmpeg's own only when they corrupt ours; espeak-ng is
# compiled here with the sanitizers (its sources and data from scripts/native-deps.mjs, as the addon's).
#
# Everything lands in build-fuzz/<target>/ (git-ignored):
#   <target>_fuzzer  the binary; re-run one input with ./build-fuzz/<target>/<target>_fuzzer FILE
#   corpus/          inputs that found new coverage; kept between runs, so later runs start further in
#   seeds/           decode: the first 64 KiB of every clip in $VOXMILL_TEST_DATA/audio and test/fixtures/audio;
#                    phonemize: the accuracy tier's sentences and the shared transcripts, one a file; both: every
#                    input in native/fuzz/regressions/<target>/ (earlier findings, kept there once fixed)
#   crashes/         crash-*, leak-*, timeout-*, oom-* inputs of THIS run (emptied at the start)
#   fuzz.log         libFuzzer's full output
#   finding.txt      after a finding: its summary, stack top and inputs (base64), which CI prints at its end
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
target="${VOXMILL_FUZZ_TARGET:-decode}"
out="build-fuzz/$target"
mkdir -p "$out/corpus" "$out/seeds" "$out/crashes"
rm -f "$out/crashes/"* "$out/finding.txt"
fuzzer="$out/${target}_fuzzer"
shared="${VOXMILL_TEST_DATA:-../shared}"
rm -f "$out/seeds/"*
seeded=0
# -fno-sanitize-recover: a UBSan finding must stop the run and leave an input, like an ASan one.
# -O1 -g: fast enough to fuzz, and stacks still name the line.
sanitize=(-O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=undefined)

echo "--- fuzz: building $fuzzer"
build_started=$SECONDS
case "$target" in
  decode)
    # The FFmpeg the addon links (scripts/static-ffmpeg.mjs, built once and cached), or the system's with
    # VOXMILL_FFMPEG=system.
    if [[ "${VOXMILL_FFMPEG:-static}" == system ]]; then
      ffmpeg_libs=(libavformat libavcodec libswresample libavutil)
      read -r -a ffmpeg_flags <<<"$(pkg-config --cflags "${ffmpeg_libs[@]}") $(pkg-config --libs "${ffmpeg_libs[@]}")"
    else
      ffmpeg_prefix="$(node scripts/static-ffmpeg.mjs)" || {
        echo "fuzz: the static FFmpeg did not build (VOXMILL_FFMPEG=system uses the system's)" >&2
        exit 2
      }
      ffmpeg_flags=(-I"$ffmpeg_prefix/include")
      for lib in avformat avcodec swresample avutil mp3lame opus; do ffmpeg_flags+=("$ffmpeg_prefix/lib/lib$lib.a"); done
      ffmpeg_flags+=(-lm -lpthread)
    fi
    "$cxx" -std=c++17 "${sanitize[@]}" -fsanitize=fuzzer,address,undefined \
      native/fuzz/decode_fuzzer.cc native/audio_decode.cc native/ffmpeg_log.cc "${ffmpeg_flags[@]}" -o "$fuzzer"
    # Seeds: real clips give the fuzzer valid headers of every container to mutate. Only their first 64 KiB
    # (-max_len below): a header and some frames, so each run is milliseconds, not a whole clip's decode.
    max_len=65536
    for dir in "$shared/audio" test/fixtures/audio; do
      [[ -d "$dir" ]] || continue
      for file in "$dir"/*.{wav,mp3,ogg,opus,flac,m4a,webm,aac,aiff,caf,au,mkv}; do
        [[ -f "$file" ]] || continue
        head -c "$max_len" "$file" >"$out/seeds/$(basename "$dir")-$(basename "$file")"
        seeded=$((seeded + 1))
      done
    done
    extra=(-dict=native/fuzz/decode.dict)
    ;;
  phonemize)
    # espeak-ng's sources and data, as the addon builds with them (fetched and cached once).
    deps="$(node scripts/native-deps.mjs)"
    espeak="$(sed -n 's/^-DVOXMILL_ESPEAK_DIR=//p' <<<"$deps")/src"
    VOXMILL_FUZZ_ESPEAK_DATA="$(sed -n 's/^-DVOXMILL_ESPEAK_DATA_DIR=//p' <<<"$deps")"
    export VOXMILL_FUZZ_ESPEAK_DATA
    mkdir -p "$out/espeak"
    printf '%s\n' '#define HAVE_MKSTEMP 1' '#define USE_ASYNC 0' '#define USE_KLATT 0' '#define USE_LIBPCAUDIO 0' \
      '#define USE_LIBSONIC 0' '#define USE_MBROLA 0' '#define USE_SPEECHPLAYER 0' \
      '#define PACKAGE_VERSION "1.52.0"' >"$out/espeak/config.h"
    cc="${cxx/clang++/clang}"
    objects=()
    for source in "$espeak"/libespeak-ng/{common,mnemonics,error,ieee80,compiledata,compiledict,dictionary,encoding,intonation,langopts,numbers,phoneme,phonemelist,readclause,setlengths,soundicon,spect,ssml,synthdata,synthesize,tr_languages,translate,translateword,voices,wavegen,speech,espeak_api}.c \
      "$espeak"/ucd-tools/src/{case,categories,ctype,proplist,scripts,tostring}.c native/espeak_clauses.c; do
      object="$out/espeak/$(basename "$source" .c).o"
      "$cc" -std=gnu99 -w -fwrapv "${sanitize[@]}" -fsanitize=fuzzer-no-link,address,undefined \
        -I"$out/espeak" -I"$espeak/include" -I"$espeak/libespeak-ng" -I"$espeak/ucd-tools/src/include" \
        -DLIBESPEAK_NG_EXPORT=1 '-DPATH_ESPEAK_DATA="/nonexistent"' -c "$source" -o "$object"
      objects+=("$object")
    done
    "$cxx" -std=c++17 "${sanitize[@]}" -fsanitize=fuzzer,address,undefined -I"$espeak/include" \
      native/fuzz/phonemize_fuzzer.cc native/phonemizer_core.cc "${objects[@]}" -o "$fuzzer"
    # Seeds: real sentences (numbers, abbreviations, punctuation) to mutate, each ending in a voice-picking byte.
    node --input-type=module -e "
      import { writeFileSync } from 'node:fs';
      const { ACCURACY_SENTENCES } = await import('./test/accuracy/sentences.mjs');
      const { NORMALIZATION_SENTENCES } = await import('./test/accuracy/normalization-sentences.mjs');
      const texts = [...ACCURACY_SENTENCES, ...NORMALIZATION_SENTENCES.flat()];
      texts.forEach((text, i) => writeFileSync('$out/seeds/sentence-' + i, Buffer.concat([Buffer.from(text), Buffer.of(i)])));
    "
    seeded=$(find "$out/seeds" -type f | wc -l)
    max_len=4096
    extra=()
    ;;
  *)
    echo "fuzz: VOXMILL_FUZZ_TARGET must be decode or phonemize, not '$target'" >&2
    exit 2
    ;;
esac
# Every input that once found a problem (fixed since) is replayed first: native/fuzz/regressions/<target>/.
if [[ -d "native/fuzz/regressions/$target" ]]; then
  cp native/fuzz/regressions/"$target"/* "$out/seeds/"
  seeded=$(find "$out/seeds" -type f | wc -l)
fi
echo "fuzz build took $((SECONDS - build_started)) s"
if ((seeded == 0)); then
  echo "fuzz: no seeds found; starting from an empty corpus" >&2
fi
echo "fuzz: $seeded seed files, $(find "$out/corpus" -type f | wc -l) corpus files from earlier runs"

echo "--- fuzz: running for $seconds s (log: $out/fuzz.log)"
run_started=$SECONDS
# -timeout: one input taking 10 s is a hang (a 64 KiB input decodes, a 4 KiB text phonemizes, in milliseconds).
# -rss_limit_mb: an input that makes the decoder hold 2 GiB is a finding (the limit is 60 s of output).
# The corpus directory comes first: new coverage is written there, seeds are only read.
set +e
"$fuzzer" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
  "${extra[@]}" -artifact_prefix="$out/crashes/" -print_final_stats=1 "$@" \
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
  for file in "${found[@]}"; do echo "fuzz: input kept at $file (re-run: ./$fuzzer $file)"; done
  # A short account for the end of CI's output (.ci/run prints it last, where a log's tail reaches): the sanitizer's
  # summary, the top of the stack, and each input small enough to carry as base64, so the finding can be replayed
  # on another machine (base64 -d > input; ./$fuzzer input).
  {
    # The sanitizer's SUMMARY names the file and line; libFuzzer's own findings (timeouts, out-of-memory, leaks) have
    # their "==N== ERROR: libFuzzer: ..." line instead.
    echo "fuzz-$target: $(grep -m1 '^SUMMARY:' "$out/fuzz.log" ||
      grep -m1 -E '^==[0-9]+== ?ERROR' "$out/fuzz.log" || echo "libFuzzer exit $rc")"
    grep -E '^ +#[0-9] ' "$out/fuzz.log" | head -n 8 || true
    for file in "${found[@]}"; do
      size=$(stat -c %s "$file")
      if ((size <= 4096)); then
        echo "input $(basename "$file") (base64): $(base64 -w0 "$file")"
      else
        echo "input $(basename "$file"): $size bytes, first 256 (base64): $(head -c 256 "$file" | base64 -w0)"
      fi
    done
  } >"$out/finding.txt"
  exit 1
fi

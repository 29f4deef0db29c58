#!/usr/bin/env bash
# The linux-arm64 build, tested under qemu-user on an x86-64 Debian machine (root or sudo: apt, binfmt_misc, and a
# private mount namespace for /proc/cpuinfo).
#
#   bash scripts/arm64/test.sh --smoke   build, then scripts/arm64/smoke.mjs: load tiny.en, transcribe jfk.wav,
#                                        synthesize a sentence, diarize (real weights: npm run models:test), and
#                                        scripts/arm64/smoke-listen.mjs on the host: the sentence understood (CI)
#   bash scripts/arm64/test.sh [vitest args]
#                                        build, then the unit and native tiers under the arm64 Node (default:
#                                        --project unit --project native), with test and hook timeouts of 30 minutes:
#                                        emulated, whisper runs 20-50x slower than on the host
#
# Under qemu 7.2 (Debian 12) /proc/cpuinfo is the host's x86 text, and ONNX Runtime's cpuinfo library dereferences
# the ARM cores it finds there (none) at load: a segmentation fault. Every arm64 program here runs with an aarch64
# /proc/cpuinfo (scripts/arm64/cpuinfo, two Cortex-A72 cores) bind-mounted over it in a private mount namespace.
#
# qemu emulates the CPU that file describes, a Cortex-A72 (QEMU_CPU, unless already set). Under its default, `max`
# (SVE and every other extension qemu knows), ONNX Runtime ran 8.5 times slower: one short sentence spoken took 189 s
# there and 22 s under cortex-a72 or neoverse-n1 (no SVE either), 2026-12-03, and the smoke's sentence and
# diarization took 27 minutes of CI. ggml is built for the baseline (NEON) either way.
set -euo pipefail
export QEMU_CPU="${QEMU_CPU:-cortex-a72}"
cd "$(dirname "$0")/../.."
started=$SECONDS
bash scripts/arm64/setup.sh
# The addon as the arm64 platform package ships it: zig for glibc 2.28 (VOXMILL_GLIBC= builds with Debian's gcc).
VOXMILL_TARGET=linux-arm64 VOXMILL_GLIBC="${VOXMILL_GLIBC-2.28}" node scripts/build-native.mjs --force
[[ -f dist/index.js ]] || npx tsc -p tsconfig.build.json
node scripts/make-fixtures.mjs >/dev/null
echo "arm64 setup and build took $((SECONDS - started)) s"

out=$PWD/build-linux-arm64
export VOXMILL_ADDON_PATH=$out/Release/voxmill.node NODE_PATH=$out/node_modules
sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo --preserve-env); fi
# arm64 programs start through binfmt_misc when setup.sh could register qemu there, else through qemu-aarch64 itself.
qemu=()
[[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] || qemu=(qemu-aarch64)
if ! "${sudo[@]}" unshare --mount -- true 2>/dev/null; then
  echo "scripts/arm64/test.sh: cannot make a private mount namespace (unshare --mount needs root or CAP_SYS_ADMIN)," \
    "which the aarch64 /proc/cpuinfo that ONNX Runtime needs under qemu is mounted in" >&2
  exit 1
fi
# Runs an arm64 program with the aarch64 /proc/cpuinfo (see above), under `timeout` when arm64_limit is set; `exec`
# keeps its exit status.
arm64_limit=()
arm64() {
  "${arm64_limit[@]}" "${sudo[@]}" unshare --mount -- sh -c 'mount --bind "$0" /proc/cpuinfo && exec "$@"' \
    "$PWD/scripts/arm64/cpuinfo" "${qemu[@]}" "$@"
}

# The host's slowdown against the reference machine (scripts/lib/machine-speed.mjs), measured here by the x64 Node when
# CI has not already: emulated code is slower by the host's factor too, and the smoke's limits grow with it.
if [[ -z ${VOXMILL_SLOWDOWN:-} ]]; then
  export "$(node scripts/lib/machine-speed.mjs | tail -1)"
fi
step_started=$SECONDS
if [[ ${1:-} == --smoke ]]; then
  smoke_out="$(mktemp -d)"
  trap 'rm -rf "$smoke_out"' EXIT
  # A whole smoke takes 4-6 minutes on the reference machine; a hung one is stopped after 40 minutes times the slowdown.
  limit=$(node -p "Math.round(2400 * Number(process.env.VOXMILL_SLOWDOWN))")
  arm64_limit=(timeout "$limit")
  rc=0
  arm64 "$out/node/bin/node" scripts/arm64/smoke.mjs "$smoke_out" || rc=$?
  if ((rc != 0)); then
    ((rc == 124)) && echo "arm64 smoke: stopped after $limit s" >&2
    exit "$rc"
  fi
  # On the host, with the host's own addon (not the arm64 one the exports above point at).
  env -u VOXMILL_ADDON_PATH -u NODE_PATH node scripts/arm64/smoke-listen.mjs "$smoke_out"
  echo "arm64 smoke took $((SECONDS - step_started)) s"
  exit 0
fi
args=("$@")
((${#args[@]} > 0)) || args=(--project unit --project native)
# Without binfmt_misc a forked test process cannot start the arm64 Node by path: run the files in threads instead.
pool=()
((${#qemu[@]} == 0)) || pool=(--pool threads)
arm64 "$out/node/bin/node" node_modules/vitest/vitest.mjs run "${pool[@]}" --testTimeout 1800000 \
  --hookTimeout 1800000 "${args[@]}"
echo "arm64 tests took $((SECONDS - step_started)) s"

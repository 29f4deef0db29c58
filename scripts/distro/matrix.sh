#!/usr/bin/env bash
# The distribution matrix: voxmill as a release publishes it (scripts/release/platform-packages.mjs), installed with
# npm into a fresh app inside minimal root filesystems that have no FFmpeg, no compiler and no Node of their own, and
# the smoke run there (scripts/distro/smoke.mjs: load, decode every input format, tiny.en on jfk.wav, a sentence in
# every output format, a diarization). Needs root (debootstrap, chroot, mounts).
#
#   bash scripts/distro/matrix.sh [suite:arch ...]     default: bullseye:amd64 bookworm:amd64 trixie:amd64
#                                                      (Debian 11, 12, 13; add bookworm:arm64 for arm64 under qemu,
#                                                      after bash scripts/arm64/setup.sh)
#
# What it makes (all outside the repository except the build folders, which git ignores):
#   build-release-x64/, build-release-arm64/   the addon as a release builds it: VOXMILL_CPU=portable VOXMILL_BLAS=none
#                                              (FFmpeg built in), once
#   ~/.cache/voxmill/rootfs/<suite>-<arch>/    debootstrap --variant=minbase of Debian's packages, once per suite
#   Node.js: node-linux-<arch> from the npm registry at this machine's version; npm: this machine's npm (JavaScript)
# Each distribution's app and inputs live in <rootfs>/voxmill-smoke/ and are made afresh every run. Prints one line a
# step and a table at the end; exits 1 when any distribution fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
data="${VOXMILL_TEST_DATA:-$root/../shared}"
cache="${VOXMILL_ROOTFS_CACHE:-$HOME/.cache/voxmill/rootfs}"
mirror="${VOXMILL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
entries=("$@")
((${#entries[@]} > 0)) || entries=(bullseye:amd64 bookworm:amd64 trixie:amd64)
[[ $(id -u) -eq 0 ]] || {
  echo "matrix: needs root (debootstrap, chroot)" >&2
  exit 2
}
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null

declare -A addon_arch=([amd64]=x64 [arm64]=arm64)
declare -A target=([amd64]=linux-x64 [arm64]=linux-arm64)

# 1. The release's addons and packages.
packages_dir="$root/build-release-packages"
targets=()
for entry in "${entries[@]}"; do
  arch="${entry#*:}"
  [[ -n "${addon_arch[$arch]:-}" ]] || {
    echo "matrix: unknown architecture in '$entry' (amd64 or arm64)" >&2
    exit 2
  }
  build="build-release-${addon_arch[$arch]}"
  if [[ ! -f "$build/Release/voxmill.node" ]]; then
    echo "--- building the release addon for ${target[$arch]} into $build/"
    cross=()
    [[ $arch == arm64 ]] && cross=(VOXMILL_TARGET=linux-arm64)
    env VOXMILL_CPU=portable VOXMILL_BLAS=none VOXMILL_BUILD_DIR="$build" "${cross[@]}" \
      node scripts/build-native.mjs --force | tail -n 1
  fi
  [[ " ${targets[*]} " == *" --target ${target[$arch]}="* ]] || targets+=(--target "${target[$arch]}=$build/Release")
done
list="$(mktemp)"
node scripts/release/platform-packages.mjs "${targets[@]}" --out "$packages_dir" >"$list"
mapfile -t tarballs <"$list"
rm -f "$list"
echo "release packages: $(for t in "${tarballs[@]}"; do echo -n "$(basename "$t") ($(du -k "$t" | cut -f1) KB) "; done)"

# 2. Each distribution.
models="$(node -p "JSON.stringify(require('./test/fixtures/real/models.json'))")"
model() { node -p "JSON.parse(process.argv[1])[process.argv[2]]" "$models" "$1"; }
rows=()
failed=0
# /proc and /dev are mounted into a root while its smoke runs; they come off however the script ends, before anything
# under the root is removed (rm --one-file-system would not cross them either).
mounted=()
unmount_all() { for m in "${mounted[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done; }
trap unmount_all EXIT
for entry in "${entries[@]}"; do
  suite="${entry%%:*}"
  arch="${entry#*:}"
  fs="$cache/$suite-$arch"
  started=$SECONDS
  if [[ ! -x "$fs/bin/sh" ]]; then
    echo "--- debootstrap $suite ($arch) into $fs"
    rm -rf --one-file-system "$fs"
    mkdir -p "$fs"
    debootstrap --variant=minbase --arch="$arch" --include=ca-certificates "$suite" "$fs" "$mirror" >"$fs.log" 2>&1 || {
      tail -n 20 "$fs.log"
      echo "matrix: debootstrap $suite failed" >&2
      exit 1
    }
  fi
  rootfs_s=$((SECONDS - started))
  glibc="$(chroot "$fs" /bin/sh -c 'ldd --version 2>&1 | head -n 1' | grep -o '[0-9.]*$' || true)"
  # Node of this machine's version for the target, from the npm registry; npm itself is JavaScript.
  work="$fs/voxmill-smoke"
  rm -rf --one-file-system "$work"
  mkdir -p "$work/app" "$work/in" "$work/pkgs" "$work/node" "$work/npm"
  (cd "$work" && npm pack "node-linux-${addon_arch[$arch]}@${NODE_VERSION:-$(node -p 'process.version.slice(1)')}" \
    --silent >/dev/null && tar xzf node-linux-*.tgz -C node --strip-components=1 && rm node-linux-*.tgz)
  cp -r "$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")/." "$work/npm/"
  cp "${tarballs[@]}" "$work/pkgs/"
  for file in jfk.wav jfk.mp3 jfk.flac jfk.ogg jfk.opus pyannote_sample.wav pyannote_sample.rttm; do
    cp "$data/audio/$file" "$work/in/"
  done
  cp test/fixtures/audio/jfk-faststart.m4a test/fixtures/audio/jfk.webm "$work/in/"
  cp "$(model whisper-tiny.en)" "$(model speaker-ge2e)" "$data/models/whisper/ggml-silero-v6.2.0.bin" "$work/in/"
  voice="$(model piper-joe-medium)"
  cp "$voice" "$voice.json" "$work/in/"
  cp scripts/distro/smoke.mjs "$work/"
  jfk_text="$(awk -F'\t' '$1 == "jfk.wav" { print $2 }' "$data/audio/transcripts.tsv")"
  in=/voxmill-smoke/in
  node -e 'console.log(JSON.stringify({
    formats: ["jfk.wav", "jfk.mp3", "jfk.flac", "jfk.ogg", "jfk.opus", "jfk-faststart.m4a", "jfk.webm"].map((f) => process.argv[1] + "/" + f),
    jfk: process.argv[1] + "/jfk.wav", jfkReference: process.argv[2], tinyEn: process.argv[1] + "/ggml-tiny.en.bin",
    voice: process.argv[1] + "/en_US-joe-medium.onnx", ge2e: process.argv[1] + "/speaker-ge2e.onnx",
    vad: process.argv[1] + "/ggml-silero-v6.2.0.bin",
    pyannote: process.argv[1] + "/pyannote_sample.wav", pyannoteRttm: process.argv[1] + "/pyannote_sample.rttm" }))' \
    "$in" "$jfk_text" >"$work/inputs.json"
  cp /etc/resolv.conf "$fs/etc/resolv.conf"
  # A network that reaches the registry through an intercepting proxy has its CA in this machine's bundle: Node in the
  # root filesystem is given the same one.
  ca_env=()
  if [[ -n "${NODE_EXTRA_CA_CERTS:-}" && -f "$NODE_EXTRA_CA_CERTS" ]]; then
    cp "$NODE_EXTRA_CA_CERTS" "$work/extra-ca.crt"
    ca_env=(NODE_EXTRA_CA_CERTS=/voxmill-smoke/extra-ca.crt)
  fi
  mountpoint -q "$fs/proc" || mount -t proc proc "$fs/proc"
  mountpoint -q "$fs/dev" || mount --bind /dev "$fs/dev"
  mounted+=("$fs/dev" "$fs/proc")
  in_root() { chroot "$fs" /usr/bin/env -i PATH=/voxmill-smoke/node/bin:/usr/bin:/bin HOME=/root "${ca_env[@]}" "$@"; }
  install_started=$SECONDS
  install_ok=1
  in_root /bin/sh -c "cd /voxmill-smoke/app && echo '{\"name\":\"app\",\"private\":true}' >package.json &&
    node /voxmill-smoke/npm/bin/npm-cli.js install --no-audit --no-fund --loglevel=error /voxmill-smoke/pkgs/*.tgz" \
    >"$work/install.log" 2>&1 || install_ok=0
  install_s=$((SECONDS - install_started))
  smoke_started=$SECONDS
  smoke="$(in_root /bin/sh -c 'cd /voxmill-smoke/app && node /voxmill-smoke/smoke.mjs /voxmill-smoke/inputs.json' \
    2>"$work/smoke.err" | tail -n 1)" || true
  smoke_s=$((SECONDS - smoke_started))
  umount "$fs/dev" "$fs/proc" 2>/dev/null || umount -l "$fs/dev" "$fs/proc" 2>/dev/null || true
  ok=yes
  ((install_ok == 1)) || {
    ok=no
    tail -n 20 "$work/install.log"
  }
  [[ "$smoke" == "{"* ]] && node -e 'process.exit(JSON.parse(process.argv[1]).failures.length ? 1 : 0)' "$smoke" ||
    ok=no
  [[ $ok == yes ]] || {
    failed=$((failed + 1))
    tail -n 20 "$work/smoke.err"
  }
  steps="$(node -e 'try { const r = JSON.parse(process.argv[1]);
    console.log(r.steps.map((s) => `${s.name}: ${s.ok ? "ok" : "FAILED (" + s.error.slice(0, 120) + ")"} ${s.seconds} s`).join("; ")) }
    catch { console.log("no result") }' "$smoke")"
  echo "$suite $arch (glibc $glibc): root fs ${rootfs_s} s, install ${install_s} s, smoke ${smoke_s} s: $steps"
  rows+=("| $suite | $arch | $glibc | $install_s s | $smoke_s s | $ok | $steps |")
done
echo "| Debian | arch | glibc | npm install | smoke | passed | steps |"
echo "| --- | --- | --- | --: | --: | --- | --- |"
printf '%s\n' "${rows[@]}"
((failed == 0))

#!/usr/bin/env bash
# The distribution matrix: voxmill as a release publishes it (scripts/release/platform-packages.mjs), installed with
# npm into a fresh app inside minimal root filesystems that have no FFmpeg, no compiler and no Node of their own, and
# the smoke run there (scripts/distro/smoke.mjs: load, decode every input format, tiny.en on jfk.wav, a sentence in
# every output format, a diarization). Needs root (debootstrap, chroot, mounts).
#
#   bash scripts/distro/matrix.sh [suite:arch ...]     default: bullseye:amd64 bookworm:amd64 trixie:amd64
#                                                      bookworm:arm64 (Debian 11, 12, 13; arm64 runs under qemu-user
#                                                      through binfmt_misc: apt-get install qemu-user-static)
#
# What it makes (all outside the repository except the build folders, which git ignores):
#   build-release-x64/, build-release-x64-v2/, build-release-arm64/
#                                              the addon as a release builds it, once: zig for glibc 2.28
#                                              (VOXMILL_GLIBC=2.28, FFmpeg built in, OpenBLAS bundled), VOXMILL_CPU=portable,
#                                              and for x64 also VOXMILL_CPU=x86-64-v2 (the package's build for CPUs
#                                              without AVX2); arm64 cross-compiled by zig
#   ~/.cache/voxmill/rootfs/<suite>-<arch>/    debootstrap --variant=minbase of Debian's packages, once per suite
#   Node.js: node-linux-<arch> from the npm registry at this machine's version; npm: this machine's npm (JavaScript)
# Each distribution's app and inputs live in <rootfs>/voxmill-smoke/ and are made afresh every run. Prints one line a
# step and a table at the end; exits 1 when any distribution fails.
#
# On amd64 the installed app also runs as on a CPU without AVX2, with a /proc/cpuinfo that says so (bind-mounted in a
# mount namespace): the package's loader must pick, load and transcribe with voxmill-x86-64-v2.node (smoke.mjs
# --quick). VOXMILL_MATRIX_WITHOUT_AVX2 says how:
#   emulate (default)  under qemu-x86_64 -cpu Nehalem (SSE4.2, no AVX): an AVX instruction anywhere would stop it
#                      with SIGILL; 3 to 5 minutes emulated on 2 cores
#   native             on this CPU: the choice and the build's transcript, in seconds (CI)
#   0                  not at all
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
data="${VOXMILL_TEST_DATA:-$root/../shared}"
cache="${VOXMILL_ROOTFS_CACHE:-$HOME/.cache/voxmill/rootfs}"
mirror="${VOXMILL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
entries=("$@")
((${#entries[@]} > 0)) || entries=(bullseye:amd64 bookworm:amd64 trixie:amd64 bookworm:arm64)
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
  [[ " ${targets[*]} " == *" --target ${target[$arch]}="* ]] && continue
  build="build-release-${addon_arch[$arch]}"
  cpus=(portable)
  [[ $arch == amd64 ]] && cpus+=(x86-64-v2)
  for cpu in "${cpus[@]}"; do
    folder="$build"
    [[ $cpu == portable ]] || folder="$build-${cpu#x86-64-}"
    if [[ ! -f "$folder/Release/voxmill.node" ]]; then
      echo "--- building the release addon for ${target[$arch]} ($cpu) into $folder/"
      env VOXMILL_TARGET="${target[$arch]}" VOXMILL_GLIBC=2.28 VOXMILL_CPU="$cpu" VOXMILL_BUILD_DIR="$folder" \
        node scripts/build-native.mjs --force | tail -n 1
    fi
    if [[ $cpu == portable ]]; then
      targets+=(--target "${target[$arch]}=$folder/Release")
    else
      targets+=(--variant "${target[$arch]}:$cpu=$folder/Release")
    fi
  done
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
# Checks for CI's closing count (VOXMILL_CI_REPORTS): the install, each smoke step, and the run without AVX2.
checks_passed=0
checks_failed=0
tally() { if (($1)); then checks_passed=$((checks_passed + 1)); else checks_failed=$((checks_failed + 1)); fi; }
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
  # voxmill's own tarball and this architecture's platform package (npm refuses to install another's by name).
  for tarball in "${tarballs[@]}"; do
    case "$(basename "$tarball")" in
      voxmill-[0-9]* | "voxmill-${target[$arch]}-"*) cp "$tarball" "$work/pkgs/" ;;
    esac
  done
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
  # Each mount is remembered as soon as it is made (newest first), so that whatever fails next leaves none behind.
  here=()
  mount_here() {
    mount "$@"
    here=("${@: -1}" "${here[@]}")
    mounted=("${@: -1}" "${mounted[@]}")
  }
  mountpoint -q "$fs/proc" || mount_here -t proc proc "$fs/proc"
  mountpoint -q "$fs/dev" || mount_here --bind /dev "$fs/dev"
  # Under qemu, /proc/cpuinfo is this machine's x86 one, and ONNX Runtime's arm64 CPU detection stops the process on
  # it: an aarch64 one is put over it (as scripts/arm64/test.sh does).
  [[ $arch != arm64 ]] || mount_here --bind "$root/scripts/arm64/cpuinfo" "$fs/proc/cpuinfo"
  # qemu emulates the CPU that file describes (see scripts/arm64/test.sh: under its default, ONNX Runtime runs 8.5
  # times slower).
  qemu_env=()
  [[ $arch != arm64 ]] || qemu_env=(QEMU_CPU="${QEMU_CPU:-cortex-a72}")
  in_root() {
    chroot "$fs" /usr/bin/env -i PATH=/voxmill-smoke/node/bin:/usr/bin:/bin HOME=/root "${ca_env[@]}" "${qemu_env[@]}" \
      "$@"
  }
  install_started=$SECONDS
  install_ok=1
  in_root /bin/sh -c "cd /voxmill-smoke/app && echo '{\"name\":\"app\",\"private\":true}' >package.json &&
    node /voxmill-smoke/npm/bin/npm-cli.js install --no-audit --no-fund --loglevel=error /voxmill-smoke/pkgs/*.tgz" \
    >"$work/install.log" 2>&1 || install_ok=0
  install_s=$((SECONDS - install_started))
  smoke_started=$SECONDS
  # The build the package's loader must pick here: this machine's CPU (or arm64's one build).
  expect_cpu=portable
  if [[ $arch == amd64 ]]; then
    for flag in avx avx2 fma f16c bmi2; do grep -m1 '^flags' /proc/cpuinfo | grep -qw "$flag" || expect_cpu=x86-64-v2; done
  fi
  smoke="$(in_root /bin/sh -c "cd /voxmill-smoke/app && node /voxmill-smoke/smoke.mjs /voxmill-smoke/inputs.json \
    --expect-cpu $expect_cpu" 2>"$work/smoke.err" | tail -n 1)" || true
  smoke_s=$((SECONDS - smoke_started))
  for m in "${here[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  without_avx2="-"
  without_avx2_ok=1
  avx2_mode="${VOXMILL_MATRIX_WITHOUT_AVX2:-emulate}"
  if [[ $arch == amd64 && $avx2_mode != 0 && $install_ok == 1 ]]; then
    emulator=()
    if [[ $avx2_mode == emulate ]]; then
      command -v qemu-x86_64 >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user >/dev/null
      emulator=(qemu-x86_64 -cpu Nehalem)
    fi
    # Run from outside the root (qemu-x86_64 is this machine's program), on the root's Node and app, with the same
    # inputs at their paths from here.
    sed "s|/voxmill-smoke/|$work/|g" "$work/inputs.json" >"$work/inputs-here.json"
    sed -E '/^flags/ s/ (avx|avx2|fma|f16c|bmi2|avx512[a-z_0-9]*)\b//g' /proc/cpuinfo >"$work/cpuinfo-without-avx2"
    avx2_started=$SECONDS
    without_avx2="$(cd "$work/app" && env -i PATH=/usr/bin:/bin HOME=/root unshare -m /bin/sh -c \
      'mount --bind "$1" /proc/cpuinfo && work="$2" && shift 2 &&
      exec "$@" "$work/node/bin/node" "$work/smoke.mjs" "$work/inputs-here.json" --quick --expect-cpu x86-64-v2' \
      sh "$work/cpuinfo-without-avx2" "$work" "${emulator[@]}" 2>"$work/without-avx2.err" | tail -n 1)" || true
    if [[ "$without_avx2" == "{"* ]] && node -e 'process.exit(JSON.parse(process.argv[1]).failures.length ? 1 : 0)' "$without_avx2"; then
      without_avx2="x86-64-v2 build ($avx2_mode), ok $((SECONDS - avx2_started)) s"
    else
      tail -n 20 "$work/without-avx2.err"
      echo "without AVX2: ${without_avx2:0:800}"
      without_avx2="FAILED ($((SECONDS - avx2_started)) s)"
      without_avx2_ok=0
    fi
  fi
  tally "$install_ok"
  [[ $without_avx2 == "-" ]] || tally "$without_avx2_ok"
  smoke_counts="$(node -e 'try { const r = JSON.parse(process.argv[1]); const ok = r.steps.filter((s) => s.ok).length;
    console.log(ok, r.steps.length - ok) } catch { console.log(0, 1) }' "$smoke")"
  checks_passed=$((checks_passed + ${smoke_counts% *}))
  checks_failed=$((checks_failed + ${smoke_counts#* }))
  ok=yes
  ((without_avx2_ok == 1)) || ok=no
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
  echo "$suite $arch (glibc $glibc): root fs ${rootfs_s} s, install ${install_s} s, smoke ${smoke_s} s: $steps; without AVX2: $without_avx2"
  rows+=("| $suite | $arch | $glibc | $install_s s | $smoke_s s | $ok | $steps | $without_avx2 |")
done
echo "| Debian | arch | glibc | npm install | smoke | passed | steps | CPU without AVX2 |"
echo "| --- | --- | --- | --: | --: | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
[[ -n "${VOXMILL_CI_REPORTS:-}" ]] && echo "$checks_passed $checks_failed" >"$VOXMILL_CI_REPORTS/distro.count"
((failed == 0))

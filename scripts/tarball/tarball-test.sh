#!/usr/bin/env bash
# The package as an app gets it: `npm pack`, then `npm install <tarball>` into a fresh app (the registry is the only
# network this machine reaches), timed, and again offline from npm's cache; node_modules' size; no ONNX Runtime GPU
# libraries and no compiled addon of the app's own; then the package used from CommonJS and from an ES module (the
# addon decodes a file, a fixture voice speaks on the ONNX Runtime and espeak-ng shipped beside it) and type-checked
# from both.
#
#   bash scripts/tarball/tarball-test.sh
#
# Needs the addon built (npm ci) and the test fixtures (node scripts/make-fixtures.mjs). With VOXMILL_CI_REPORTS set
# (a folder), its checks are counted in tarball.count for scripts/ci-summary.mjs.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
data="${VOXMILL_TEST_DATA:-$root/../shared}"
[[ -f "$data/audio/jfk.wav" ]] || {
  echo "tarball: test data not found at $data (set VOXMILL_TEST_DATA)" >&2
  exit 1
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
check() {
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
    echo "  ok: $what"
  else
    failed=$((failed + 1))
    echo "  FAILED: $what"
  fi
}

echo "--- tarball: npm pack"
started=$SECONDS
# The addon built here may be a native one (VOXMILL_CPU=native, the default): the package is installed on this
# machine only, so packing it is allowed (scripts/prebuild.mjs refuses otherwise).
VOXMILL_PACK_NATIVE=1 npm pack --silent --pack-destination "$work" >"$work/pack.txt"
tarball="$work/$(tail -1 "$work/pack.txt")"
echo "packed $(basename "$tarball"): $(du -k "$tarball" | cut -f1) KB in $((SECONDS - started)) s"

app="$work/app"
mkdir -p "$app"
cp scripts/tarball/smoke.cjs scripts/tarball/smoke.mjs scripts/tarball/types.mts scripts/tarball/types.cts "$app/"
cd "$app"
echo '{ "name": "voxmill-tarball-app", "version": "1.0.0", "private": true }' >package.json

install() {
  local started_ms
  started_ms=$(date +%s%3N)
  npm install "$tarball" --no-audit --no-fund --loglevel=error "$@" >"$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2
    return 1
  }
  echo $(($(date +%s%3N) - started_ms))
}
echo "--- tarball: npm install into a fresh app (registry only)"
online_ms=$(install)
modules_mb=$(($(du -sk node_modules | cut -f1) / 1024))
echo "installed in $((online_ms / 1000)).$(((online_ms % 1000) / 100)) s; node_modules ${modules_mb} MB, the largest:"
du -sk node_modules/* node_modules/@*/* 2>/dev/null | sort -rn | head -5 | awk '{ printf "  %5d MB  %s\n", $1 / 1024, $2 }' || true
grep -i "install-scripts\|skipped" "$work/install.log" || true

echo "--- tarball: again, offline (npm's cache)"
rm -rf node_modules package-lock.json
offline_ms=$(install --offline)
echo "installed offline in $((offline_ms / 1000)).$(((offline_ms % 1000) / 100)) s"

echo "--- tarball: checks"
voxmill="$app/node_modules/voxmill"
check "no onnxruntime-node (and so no CUDA libraries) was installed" test ! -e node_modules/onnxruntime-node
check "no CUDA library under node_modules" bash -c '! find node_modules -iname "*cuda*.so*" | grep -q .'
check "the package ships the prebuilt addon for $(node -p 'process.platform + "-" + process.arch')" \
  test -f "$voxmill/prebuilds/$(node -p 'process.platform + "-" + process.arch')/voxmill.node"
check "the app compiled nothing (no build/ in the package)" test ! -e "$voxmill/build"
prebuilt="$voxmill/prebuilds/$(node -p 'process.platform + "-" + process.arch')"
check "ONNX Runtime's library and espeak-ng's data ship beside the addon" \
  test -f "$prebuilt/libonnxruntime.so.1" -a -f "$prebuilt/espeak-ng-data/phontab"
# FFmpeg is built into the addon (scripts/static-ffmpeg.mjs): it needs no libav* of the system, and exports none.
echo "  the addon needs: $(readelf -d "$prebuilt/voxmill.node" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
check "the prebuilt addon links no FFmpeg library of the system" \
  bash -c '! readelf -d "$1" | grep -q "NEEDED.*lib\(av\|sw\)"' _ "$prebuilt/voxmill.node"
check "the prebuilt addon exports no FFmpeg symbol" \
  bash -c '! nm -D --defined-only "$1" | grep -q " T av_"' _ "$prebuilt/voxmill.node"
# stdout only (a warning on stderr must not break the JSON); stderr is shown when the check fails.
cjs="$(node smoke.cjs "$data/audio/jfk.wav" "$root/test/fixtures/voices" 2>"$work/cjs.err" | tail -1)" || true
echo "  cjs: $cjs"
[[ -n "$cjs" ]] || cat "$work/cjs.err"
check "CommonJS: require('voxmill') decodes jfk.wav and speaks" \
  node -e 'const r = JSON.parse(process.argv[1]); process.exit(r.decodedSeconds > 10 && r.spokenBytes > 1000 ? 0 : 1)' "$cjs"
esm="$(node smoke.mjs "$data/audio/jfk.wav" "$root/test/fixtures/voices" 2>"$work/esm.err" | tail -1)" || true
echo "  esm: $esm"
[[ -n "$esm" ]] || cat "$work/esm.err"
check "ES module: import from 'voxmill' decodes jfk.wav and speaks" \
  node -e 'const r = JSON.parse(process.argv[1]); process.exit(r.decodedSeconds > 10 && r.spokenBytes > 1000 ? 0 : 1)' "$esm"
tsc="$root/node_modules/typescript/bin/tsc"
# With Node's own types, as a TypeScript app on Node has them (@types/node; here the checkout's): voxmill's types use
# Buffer and node:stream, and no dependency of voxmill brings @types/node along any more.
check "types from an ES module and from CommonJS (tsc, module nodenext)" \
  node "$tsc" --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 --skipLibCheck false \
  --typeRoots "$root/node_modules/@types" --types node types.mts types.cts

echo "tarball: install ${online_ms} ms online, ${offline_ms} ms offline; node_modules ${modules_mb} MB"

# As a release publishes it (scripts/release/platform-packages.mjs): voxmill without an addon, and the platform
# package holding it, installed together. The addon built here may be a native one linked to OpenBLAS, built for this
# machine's glibc, without the x86-64-v2 build: allowed, since it stays on this machine (a release refuses all three;
# scripts/distro/matrix.sh installs real release packages into bare Debian roots).
echo "--- tarball: release packages (voxmill + @voxmill/linux-x64-gnu)"
started=$SECONDS
(cd "$root" && node scripts/release/platform-packages.mjs --target "linux-x64=build/Release" --out "$work/release" \
  --allow-native --allow-system-libraries --allow-newer-glibc) >"$work/release.txt" 2>"$work/release.err" || cat "$work/release.err"
mapfile -t packages <"$work/release.txt"
echo "assembled in $((SECONDS - started)) s: $(for p in "${packages[@]}"; do echo -n "$(basename "$p") $(du -k "$p" | cut -f1) KB; "; done)"
app2="$work/app2"
mkdir -p "$app2"
cp "$root/scripts/tarball/smoke.cjs" "$app2/"
cd "$app2"
echo '{ "name": "voxmill-release-app", "version": "1.0.0", "private": true }' >package.json
started_ms=$(date +%s%3N)
release_ok=0
if ((${#packages[@]} >= 2)); then
  npm install "${packages[@]}" --no-audit --no-fund --loglevel=error >"$work/install2.log" 2>&1 || release_ok=$?
else
  release_ok=1
  echo "  no release packages were assembled" >"$work/install2.log"
fi
release_ms=$(($(date +%s%3N) - started_ms))
((release_ok == 0)) || cat "$work/install2.log"
mb() { echo $(($(du -sk "$1" 2>/dev/null | cut -f1 || echo 0) / 1024)); }
echo "installed in $((release_ms / 1000)).$(((release_ms % 1000) / 100)) s; node_modules $(mb node_modules) MB" \
  "(voxmill $(mb node_modules/voxmill) MB, @voxmill/linux-x64-gnu $(mb node_modules/@voxmill/linux-x64-gnu) MB)"
npm ls --all 2>/dev/null | head -40 || true
check "voxmill and its platform package install together from the release's tarballs" test "$release_ok" -eq 0
check "the published voxmill has no install script, no addon and no build tools" \
  node -e 'const p = require("voxmill/package.json"), fs = require("fs");
    process.exit(!p.scripts?.install && !fs.existsSync("node_modules/voxmill/prebuilds") &&
      !fs.existsSync("node_modules/cmake-js") && !fs.existsSync("node_modules/whisper-cpp-src") ? 0 : 1)'
check "its optional dependency names the platform package at voxmill's exact version" \
  node -e 'const p = require("voxmill/package.json");
    process.exit(p.optionalDependencies?.["@voxmill/linux-x64-gnu"] === p.version ? 0 : 1)'
check "the platform package ships its licence notices" test -f node_modules/@voxmill/linux-x64-gnu/LICENSES/ffmpeg.txt
release_smoke="$(node smoke.cjs "$data/audio/jfk.wav" "$root/test/fixtures/voices" 2>"$work/release-smoke.err" | tail -1)" || true
echo "  release smoke: $release_smoke"
[[ -n "$release_smoke" ]] || cat "$work/release-smoke.err"
check "require('voxmill') loads the platform package's addon, decodes jfk.wav and speaks" \
  node -e 'const r = JSON.parse(process.argv[1]); process.exit(r.decodedSeconds > 10 && r.spokenBytes > 1000 ? 0 : 1)' "$release_smoke"

echo "tarball: $passed passed, $failed failed"
[[ -n "${VOXMILL_CI_REPORTS:-}" ]] && echo "$passed $failed" >"$VOXMILL_CI_REPORTS/tarball.count"
((failed == 0))

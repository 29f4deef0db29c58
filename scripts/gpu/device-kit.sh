#!/usr/bin/env bash
# Packs what bench/gpu.mjs needs on a bare GPU machine that has the NVIDIA driver and CUDA 13's cuBLAS but no Node.js,
# no FFmpeg and no network (a rented or lent machine), into .gpu/ (git-ignored), in pieces of at most 60 MB so that
# each fits one upload of a size-limited remote runner, and writes the commands that unpack and run them, one per
# upload, to .gpu/steps.txt.
#
#   bash scripts/gpu/build-gpu.sh cuda      first (build-cuda/, about 18 min on 2 cores)
#   npm run models:test                     the real tiny.en and base
#   bash scripts/gpu/device-kit.sh          then run .gpu/steps.txt's steps in order on the GPU machine, from a copy
#                                           of this checkout holding the step's pieces; /tmp/vm there keeps the
#                                           unpacked kit between steps
#
# Pieces: libs.tar.xz (every shared library the CUDA addon loads, but glibc, libstdc++, libgcc and the CUDA libraries:
# FFmpeg's and OpenBLAS's closure, about 130 files, 51 MB packed), node.tar.xz (this machine's node binary, 24 MB),
# addon.tar.xz (build-cuda's addon, stripped, 21 MB), dist/ and the shared audio bench/gpu.mjs reads, and the models
# quantized to q5_1 (tiny.en 32 MB, base 60 MB: f16 files do not fit one upload).
# The addon runs only on the GPU architectures build-cuda was built for: build-gpu.sh's default VOXMILL_CUDA_ARCHS is
# 90-real, Hopper (H100, H200); build again with the target's (86-real for an RTX 30xx, 89-real for an L4) otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
addon=build-cuda/Release/voxmill.node
[[ -f $addon ]] || {
  echo "device-kit: $addon not found; run bash scripts/gpu/build-gpu.sh cuda first" >&2
  exit 1
}
kit=.gpu
rm -rf "$kit"
mkdir -p "$kit/shared/audio" "$kit/m1" "$kit/m2"

# The addon's libraries as this machine resolves them, less what any Linux with the NVIDIA stack has.
ldd "$addon" | awk '$3 ~ /^\// {print $3}' |
  grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so|/lib(cudart|cublas|cublasLt)\.so' \
    >"$kit/closure.txt"
tar -chPf - --transform 's,.*/,,' -T "$kit/closure.txt" | xz -9e -T2 >"$kit/libs.tar.xz"
tar -chf - -C "$(dirname "$(command -v node)")" node | xz -9e -T2 >"$kit/node.tar.xz"
stripped=$(mktemp -d)
strip --strip-unneeded -o "$stripped/voxmill.node" "$addon"
tar -cf - -C "$stripped" voxmill.node | xz -9e -T2 >"$kit/addon.tar.xz"
rm -rf "$stripped"
[[ -f dist/index.js ]] || npx tsc -p tsconfig.build.json
cp -r dist "$kit/dist"
shared="${VOXMILL_TEST_DATA:-../shared}"
cp "$shared"/audio/{jfk.wav,gb0.wav,transcripts.tsv} "$kit/shared/audio/"

# q5_1 copies of the real models (bench/lib.mjs quantizedCopy, with whisper.cpp's whisper-quantize).
node --input-type=module -e "
  const { quantizedCopy, realModels } = await import('./bench/lib.mjs');
  const { ensureWhisperCli, quantizeBeside } = await import('./bench/build-whisper-cli.mjs');
  const { copyFileSync } = await import('node:fs');
  const models = realModels(['whisper-tiny.en', 'whisper-base']);
  const quantize = quantizeBeside(ensureWhisperCli());
  copyFileSync(quantizedCopy(models['whisper-tiny.en'], 'q5_1', quantize), '$kit/m1/model.bin');
  copyFileSync(quantizedCopy(models['whisper-base'], 'q5_1', quantize), '$kit/m2/model.bin');
"

cat >"$kit/steps.txt" <<'STEPS'
# Each step: the pieces to upload (relative to the checkout), then the command, run in the checkout's copy.
1 carry .gpu/libs.tar.xz
rm -rf /tmp/vm; mkdir -p /tmp/vm/lib /tmp/vm/repo && python3 -c "import tarfile; tarfile.open('.gpu/libs.tar.xz').extractall('/tmp/vm/lib')" && cp -r bench package.json /tmp/vm/repo/ && nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv; nproc; lscpu | grep -m1 'Model name'; find /usr /opt -xdev -name 'libcublas.so.13*' 2>/dev/null | head -3

2 carry .gpu/node.tar.xz .gpu/addon.tar.xz .gpu/dist .gpu/shared
python3 -c "import tarfile; tarfile.open('.gpu/node.tar.xz').extractall('/tmp/vm/bin'); tarfile.open('.gpu/addon.tar.xz').extractall('/tmp/vm')" && rm -rf /tmp/vm/repo/dist /tmp/vm/shared && cp -r .gpu/dist /tmp/vm/repo/dist && cp -r .gpu/shared /tmp/vm/shared && B=$(find /usr /opt -xdev -name 'libcublas.so.13' 2>/dev/null | head -1) && R=$(find /usr /opt -xdev -name 'libcudart.so.13' 2>/dev/null | head -1) && [ -n "$B" ] && [ -n "$R" ] || { echo 'no CUDA 13 libcublas.so.13 / libcudart.so.13 under /usr or /opt'; exit 1; }; CB=$(dirname "$B") && CR=$(dirname "$R") && echo "export PATH=/tmp/vm/bin:\$PATH LD_LIBRARY_PATH=/tmp/vm/lib:$CB:$CR VOXMILL_ADDON_PATH=/tmp/vm/voxmill.node VOXMILL_TEST_DATA=/tmp/vm/shared" >/tmp/vm/env && . /tmp/vm/env && ldd /tmp/vm/voxmill.node | grep -E 'not found|cublas'; cd /tmp/vm/repo && node --input-type=module -e "const s = await import('./dist/system.js'); console.log(s.backends(), s.devices(), s.versions().system)"

3 carry .gpu/m1
R=$PWD; . /tmp/vm/env && cd /tmp/vm/repo && rm -rf bench/out && { nvidia-smi --query-gpu=memory.used --format=csv,noheader -lms 200 >$OUT/gpu-mem-tiny.txt 2>&1 & S=$!; }; node bench/gpu.mjs --models tiny.en=$R/.gpu/m1/model.bin 2>&1; kill $S; cp bench/out/gpu-*.json $OUT/; sort -n $OUT/gpu-mem-tiny.txt | tail -1

4 carry .gpu/m2
R=$PWD; . /tmp/vm/env && cd /tmp/vm/repo && rm -rf bench/out && { nvidia-smi --query-gpu=memory.used --format=csv,noheader -lms 200 >$OUT/gpu-mem-base.txt 2>&1 & S=$!; }; node bench/gpu.mjs --models base=$R/.gpu/m2/model.bin 2>&1; kill $S; cp bench/out/gpu-*.json $OUT/; sort -n $OUT/gpu-mem-base.txt | tail -1
STEPS
du -h "$kit"/*.tar.xz "$kit"/m1/model.bin "$kit"/m2/model.bin
echo "steps: $kit/steps.txt"

#!/usr/bin/env bash
# Builds the addon with a GPU backend into build-<backend>/ (the CPU build in build/ is left alone) and checks what
# it can here: that it links, what it needs at run time, and that on a machine without that GPU it loads, finds no
# device and transcribes on the CPU with a VOXMILL_GPU_FALLBACK warning. Root or sudo (apt).
#
#   bash scripts/gpu/build-gpu.sh cuda      CUDA 13 from NVIDIA's wheels (scripts/gpu/cuda-from-wheels.sh), or a
#                                           system toolkit given by CUDAToolkit_ROOT; VOXMILL_CUDA_ARCHS (default
#                                           here 90-real, one architecture: the whole default list takes several
#                                           times as long)
#   bash scripts/gpu/build-gpu.sh vulkan    Debian 12's loader, glslc and SPIRV headers, Debian 13's Vulkan headers
#                                           (scripts/gpu/vulkan-headers.sh)
#
# Measured on the 2-core development machine: BENCHMARKS.md, "GPU builds".
set -euo pipefail
cd "$(dirname "$0")/../.."
backend=${1:-}
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export VOXMILL_GPU=$backend VOXMILL_BUILD_DIR=build-$backend VOXMILL_CPU=${VOXMILL_CPU:-portable}
case "$backend" in
  cuda)
    if [[ -z ${CUDAToolkit_ROOT:-} ]] && ! command -v nvcc >/dev/null; then
      # cuda-from-wheels.sh makes a virtualenv.
      if ! dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q "install ok installed"; then
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
      fi
      CUDAToolkit_ROOT=$(bash scripts/gpu/cuda-from-wheels.sh | tail -1)
      export CUDAToolkit_ROOT
    fi
    export VOXMILL_CUDA_ARCHS=${VOXMILL_CUDA_ARCHS:-90-real}
    ;;
  vulkan)
    missing=()
    for pkg in libvulkan-dev glslc spirv-headers; do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if ((${#missing[@]} > 0)); then
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    include=$(bash scripts/gpu/vulkan-headers.sh | tail -1)
    export VOXMILL_CMAKE_ARGS="-DVulkan_INCLUDE_DIR=$include ${VOXMILL_CMAKE_ARGS:-}"
    ;;
  *)
    echo "usage: build-gpu.sh cuda|vulkan" >&2
    exit 2
    ;;
esac
started=$SECONDS
VOXMILL_BUILD_JOBS=${VOXMILL_BUILD_JOBS:-2} node scripts/build-native.mjs --force
echo "$backend build took $((SECONDS - started)) s"
addon=$PWD/build-$backend/Release/voxmill.node
stripped=$(mktemp)
strip --strip-unneeded -o "$stripped" "$addon"
echo "size: $(stat -c %s "$addon") bytes ($(stat -c %s "$stripped") stripped)"
rm -f "$stripped"
echo "needs: $(readelf -d "$addon" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
[[ -f dist/index.js ]] || npx tsc -p tsconfig.build.json
node scripts/make-fixtures.mjs >/dev/null
VOXMILL_ADDON_PATH=$addon node --input-type=module -e "
  const { backends, devices, WhisperModel } = await import('./dist/index.js');
  console.log('backends:', backends().join(', '));
  console.log('devices:', devices().map((d) => d.name + ' [' + d.type + '] ' + d.description).join('; '));
  const model = await WhisperModel.load('test/fixtures/models/ggml-tiny.en-random.bin');
  const result = await model.transcribe('$(node -p "require('path').resolve(process.env.VOXMILL_TEST_DATA ?? '../shared')")/audio/jfk.wav', { threads: 2 });
  console.log('model runs on:', model.info.device, '(gpu: ' + model.info.gpu + '), transcribed', result.duration, 's of audio');
  model.dispose();
"

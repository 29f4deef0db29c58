#!/usr/bin/env bash
# A CUDA toolkit for building the addon (VOXMILL_GPU=cuda), assembled from NVIDIA's wheels on the Python package index,
# for machines without a system toolkit. Idempotent; prints the toolkit root on its last line (the rest goes to stderr).
#
#   root=$(bash scripts/gpu/cuda-from-wheels.sh)   then   CUDAToolkit_ROOT=$root VOXMILL_GPU=cuda npm run build:native
#
# CUDA 13, not 12: the nvidia-cuda-nvcc-cu12 wheels (12.0 to 12.9) hold only ptxas, nvvm and the crt headers, with no
# nvcc, cudafe++, fatbinary or nvlink. From 13.0 the wheels ship the whole compiler into one prefix,
# site-packages/nvidia/cu13. CUDA 13 runs on NVIDIA drivers 580 and newer, and compiles for sm_75 (Turing) and newer.
# No wheel ships the driver library (libcuda.so); the addon does not link it (GGML_CUDA_NO_VMM, CMakeLists.txt).
#
# Environment: VOXMILL_CUDA_DIR (default ~/.cache/voxmill/cuda-13.0): the virtualenv and the toolkit root go there.
set -euo pipefail
dir="${VOXMILL_CUDA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/voxmill/cuda-13.0}"
venv="$dir/venv"
root="$dir/toolkit"
# CUDA 13.0 Update 2: one consistent set.
packages=(nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96
  nvidia-cublas==13.1.0.3 nvidia-cuda-cccl==13.0.85)

[[ -x $venv/bin/pip ]] || python3 -m venv "$venv" >&2
"$venv/bin/pip" install -q --disable-pip-version-check "${packages[@]}" >&2
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
wheels="$site/nvidia/cu13"
[[ -x $wheels/bin/nvcc ]] || {
  echo "cuda-from-wheels: no nvcc in $wheels/bin" >&2
  exit 1
}
mkdir -p "$root/bin" "$root/lib64"
# nvcc finds its tools and nvcc.profile beside the path it was started by (the symlink), and the profile's
# $(TOP)/include and $(TOP)/lib64 are then this root: so bin/ is a folder of our own holding links to each tool.
for f in "$wheels"/bin/*; do ln -sfn "$f" "$root/bin/$(basename "$f")"; done
ln -sfn "$wheels/include" "$root/include"
ln -sfn "$wheels/nvvm" "$root/nvvm"
ln -sfn lib64 "$root/lib" # nvcc.profile puts $(TOP)/lib on LD_LIBRARY_PATH (libnvvm)
for f in "$wheels"/lib/*.so* "$wheels"/lib/*.a; do [[ -e $f ]] && ln -sfn "$f" "$root/lib64/$(basename "$f")"; done
# The wheels ship only the versioned names (libcudart.so.13): add the plain ones the linker looks for.
for lib in cudart cublas cublasLt; do
  versioned=$(cd "$root/lib64" && ls "lib$lib.so."* 2>/dev/null | head -1) || true
  [[ -n $versioned ]] && ln -sfn "$versioned" "$root/lib64/lib$lib.so"
done
"$root/bin/nvcc" --version | tail -2 >&2
echo "$root"

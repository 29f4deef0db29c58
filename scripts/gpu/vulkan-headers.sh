#!/usr/bin/env bash
# Vulkan headers new enough for whisper.cpp's Vulkan backend, for Debian 12: its libvulkan-dev is 1.3.239, and
# ggml-vulkan.cpp uses VK_EXT_layer_settings (1.3.272 and newer). Downloads Debian 13's libvulkan-dev (1.4.309) with a
# private apt state (the system's sources and packages are not touched) and unpacks it without installing it.
# Idempotent; prints the include folder on its last line, for VOXMILL_CMAKE_ARGS=-DVulkan_INCLUDE_DIR=<it>.
#
# The loader itself (libvulkan1), glslc and spirv-headers come from Debian 12: scripts/gpu/build-gpu.sh installs them.
# Environment: VOXMILL_VULKAN_DIR (default ~/.cache/voxmill/vulkan-headers).
set -euo pipefail
dir="${VOXMILL_VULKAN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/voxmill/vulkan-headers}"
include="$dir/usr/include"
if [[ ! -f $include/vulkan/vulkan_core.h ]]; then
  state="$dir/apt"
  mkdir -p "$state/lists/partial" "$state/archives/partial" "$state/cache"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
    >"$state/sources.list"
  apt_options=(-o "Dir::Etc::SourceList=$state/sources.list" -o "Dir::Etc::SourceParts=-" -o "Dir::State=$state"
    -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o "Dir::Cache::Archives=$state/archives"
    -o "Debug::NoLocking=1")
  apt-get "${apt_options[@]}" update -qq >&2
  (cd "$state" && apt-get "${apt_options[@]}" download libvulkan-dev >&2)
  dpkg -x "$state"/libvulkan-dev_*.deb "$dir"
fi
grep -q '^#define VK_EXT_layer_settings 1' "$include/vulkan/vulkan_core.h" || {
  echo "vulkan-headers: $include has no VK_EXT_layer_settings" >&2
  exit 1
}
echo "$include"

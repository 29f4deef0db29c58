# Included after add_subdirectory() of the whisper.cpp tree, by CMakeLists.txt (the addon) and by the wrapper project
# bench/build-whisper-cli.mjs builds whisper-cli through, so the peer the parity tests compare against runs the same
# kernels. Input: VOXMILL_CPU (native | portable | x86-64-v2).
#
# A native build on a CPU with AMX compiles ggml's AMX buffer type, which takes the model's weights and, for quantized
# types (q8_0, q5_1, ...), runs them with tile instructions. On a 2-vCPU Sapphire Rapids VM (Firecracker, kernel 6.18)
# whose CPUID, XCR0 and arch_prctl(ARCH_REQ_XCOMP_PERM) all report AMX ready, the first `ldtilecfg` raised a general
# protection fault: a q8_0 model's first transcription killed the process (whisper-cli too). The host's readiness
# cannot be trusted without executing a tile instruction, so the AMX code is not compiled; f16 models lose nothing
# measured (BENCHMARKS.md, "Patch 0004"), quantized ones run on ggml's AVX-512 VNNI kernels.
if(VOXMILL_CPU STREQUAL "native" AND TARGET ggml-cpu AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-mno-amx-tile VOXMILL_COMPILER_HAS_NO_AMX)
  if(VOXMILL_COMPILER_HAS_NO_AMX)
    target_compile_options(ggml-cpu PRIVATE -mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
  else()
    message(WARNING "voxmill: ${CMAKE_CXX_COMPILER} does not take -mno-amx-tile: on a CPU with AMX this native build "
      "compiles ggml's AMX code, which faulted on a VM that reported AMX ready (native/ggml-cpu-amx.cmake)")
  endif()
endif()

# AddressSanitizer for the addon build of scripts/test-asan.sh, injected after project(voxmill) with
# -DCMAKE_PROJECT_voxmill_INCLUDE=<this file> so CMakeLists.txt stays as users build it.
#
# Instrumented: voxmill's own sources, espeak-ng (compiled in: it reads every synthesis's text), whisper.cpp (model
# loading, the decoder, DTW) and ggml's base (tensor allocation, graph and backend bookkeeping). Not instrumented: ggml-cpu, the matrix and vector kernels, which are
# nearly all of a transcription's time: under ASan they made whisper runs several times slower, and the whisper
# tests' 120 s timeouts were passed. Their memory comes from ggml-base's allocators, which are checked.

function(voxmill_asan_targets)
  foreach(target voxmill voxmill_espeak whisper ggml ggml-base)
    if(NOT TARGET ${target})
      message(FATAL_ERROR "asan.cmake: no target '${target}' (has the whisper.cpp layout changed?)")
    endif()
    # -O1 after the config's -O3: readable stacks, and ASan's recommended level.
    target_compile_options(${target} PRIVATE -O1 -g -fsanitize=address -fno-omit-frame-pointer)
  endforeach()
  target_link_options(voxmill PRIVATE -fsanitize=address)
endfunction()

# Deferred to the end of the top-level CMakeLists.txt, when whisper.cpp's targets exist.
cmake_language(DEFER CALL voxmill_asan_targets)

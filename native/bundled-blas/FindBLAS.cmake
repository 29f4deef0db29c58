# FindBLAS for VOXMILL_BLAS=bundled (CMakeLists.txt puts this folder first on CMAKE_MODULE_PATH): ggml-blas's
# find_package(BLAS) gets scipy-openblas32's library from VOXMILL_OPENBLAS_DIR. CMake's own module would link-check
# for sgemm_, which this library names scipy_sgemm_, and fail.
set(BLAS_FOUND TRUE)
set(BLAS_LIBRARIES "${VOXMILL_OPENBLAS_DIR}/lib/libscipy_openblas.so")
set(BLAS_INCLUDE_DIRS "${VOXMILL_OPENBLAS_DIR}/include")
set(BLAS_LINKER_FLAGS "")

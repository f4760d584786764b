# xgrammar's C++ core: the grammar engine behind structured outputs (JSON Schema, regex, EBNF
# -> token masks), the one vLLM, SGLang and TensorRT-LLM use. It is not packaged for Debian;
# its PyPI source distribution carries the C++ sources, pinned here by version and hash and
# built as a static library without its Python bindings. Machines without PyPI (the GPU
# machine) find the same archive at TESSERA_XGRAMMAR_ARCHIVE (scripts/gpu_deps.sh puts it in
# .gpu-deps/).
set(TESSERA_XGRAMMAR_VERSION 0.2.9)
set(TESSERA_XGRAMMAR_SHA256 87b466bca2475e29bb0323abc62c6c33cbcbcff47e5fb800a3e2099ac9620b90)
set(TESSERA_XGRAMMAR_URL
    "https://files.pythonhosted.org/packages/3a/2f/5bf8e8fa6619cff534932f79b0abc81a417d354bc5093252c1a6081d0a93/xgrammar-${TESSERA_XGRAMMAR_VERSION}.tar.gz")
set(TESSERA_XGRAMMAR_ARCHIVE "${CMAKE_SOURCE_DIR}/.gpu-deps/xgrammar-${TESSERA_XGRAMMAR_VERSION}.tar.gz"
    CACHE FILEPATH "A local copy of xgrammar's source distribution (used when present)")
if(EXISTS "${TESSERA_XGRAMMAR_ARCHIVE}")
  set(xgrammar_source "${TESSERA_XGRAMMAR_ARCHIVE}")
else()
  set(xgrammar_source "${TESSERA_XGRAMMAR_URL}")
endif()

include(FetchContent)
FetchContent_Declare(xgrammar URL "${xgrammar_source}" URL_HASH SHA256=${TESSERA_XGRAMMAR_SHA256}
                     DOWNLOAD_EXTRACT_TIMESTAMP TRUE
                     PATCH_COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/cmake/xgrammar_config.cmake
                                   <SOURCE_DIR>/cmake/config.cmake)
FetchContent_GetProperties(xgrammar)
if(NOT xgrammar_POPULATED)
  FetchContent_Populate(xgrammar)
  # Out of `all` and of our install: only what links it builds it.
  add_subdirectory(${xgrammar_SOURCE_DIR} ${xgrammar_BINARY_DIR} EXCLUDE_FROM_ALL)
endif()
# Its flags make warnings errors and use LTO; ours may warn differently, and its objects join
# our non-LTO link.
target_compile_options(xgrammar PRIVATE -Wno-error -fno-lto -w)

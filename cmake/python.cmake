# The Python package (python/tessera/, its extension tessera._core from python/bindings/): built
# in this tree beside the CLI and the tests, into build/python/tessera (with the package's .py
# files copied there, so PYTHONPATH=build/python imports what was just built). `pip install .`
# (pyproject.toml, scikit-build-core) builds the same targets and installs them; `make test`
# points it at this tree (build-dir=build), so the core is compiled once.
if(NOT TESSERA_PYTHON OR TESSERA_SANITIZE OR TESSERA_FUZZ)
  return()
endif()
find_package(Python 3.9 COMPONENTS Interpreter Development.Module QUIET)
if(NOT Python_FOUND)
  message(STATUS "tessera: no Python development files: the Python package is not built")
  return()
endif()
execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir OUTPUT_VARIABLE nanobind_ROOT
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE nanobind_missing)
if(nanobind_missing)
  message(STATUS "tessera: nanobind is not installed (scripts/setup.sh installs it): the Python package is not built")
  return()
endif()
find_package(nanobind CONFIG REQUIRED)
set(TESSERA_PYTHON_DIR ${CMAKE_BINARY_DIR}/python/tessera)
nanobind_add_module(_core NB_STATIC ${CMAKE_SOURCE_DIR}/python/bindings/core_module.cc)
target_link_libraries(_core PRIVATE tessera_core)
set_target_properties(_core PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${TESSERA_PYTHON_DIR})
add_custom_target(tessera_python_files ALL
                  COMMAND ${CMAKE_COMMAND} -E copy_directory ${CMAKE_SOURCE_DIR}/python/tessera ${TESSERA_PYTHON_DIR}
                  COMMENT "Python package files into ${TESSERA_PYTHON_DIR}")
add_dependencies(_core tessera_python_files)
if(SKBUILD)  # pip install / pip wheel: the extension and the CLI go into the package
  install(TARGETS _core LIBRARY DESTINATION tessera COMPONENT python)
  install(TARGETS tessera RUNTIME DESTINATION tessera/bin COMPONENT python)
endif()
set(TESSERA_PYTHON_ENABLED ON)
message(STATUS "tessera: building the Python package with ${Python_EXECUTABLE}")

# Finds oneDNN (>= 3.2, with the Graph API) and sets the install RPATH of the
# extension so that it finds libdnnl.so.3 without LD_LIBRARY_PATH.
#
# Default: the onednn-devel-cpu-gomp wheel installed in the build environment
# (its CMake config lives in <prefix>/lib/cmake/dnnl). The runtime library comes
# from the onednn-cpu-gomp wheel, which installs libdnnl.so.3 into the
# environment's lib/ directory: <prefix>/lib, three levels above
# <prefix>/lib/pythonX.Y/site-packages/onednn_graph/_core*.so.
#
# Another oneDNN: set the environment variable ONEDNN_ROOT to its install prefix;
# the extension then links it and records its absolute library directory in the
# RPATH. Only the environment decides (third_party/onednn_dependency.py reads it
# too, for the package's dependencies), on every configure: a build directory
# that last built against another oneDNN forgets what it found there. A prefix without a CMake config (PyPI's
# onednn-devel 2026.x: headers and lib/libdnnl.so only) is found by its files,
# its version read from dnnl_version.h.
#
# Sets ONEDNN_GRAPH_SYCL when the library's CPU runtime is SYCL (PyPI's onednn
# 2026.x): the extension then compiles its SYCL allocator and links libsycl.

set(ONEDNN_ROOT "$ENV{ONEDNN_ROOT}" CACHE PATH "Install prefix of a oneDNN >= 3.2 to build against" FORCE)
if(NOT "${ONEDNN_ROOT}" STREQUAL "${ONEDNN_GRAPH_CONFIGURED_ROOT}")
  unset(dnnl_DIR CACHE)
  unset(_onednn_graph_by_files_include CACHE)
  unset(_onednn_graph_by_files_lib CACHE)
  unset(ONEDNN_GRAPH_SYCL_LIB CACHE)
  set(ONEDNN_GRAPH_CONFIGURED_ROOT "${ONEDNN_ROOT}" CACHE INTERNAL "ONEDNN_ROOT of the last configure")
endif()

if(ONEDNN_ROOT)
  find_package(dnnl 3.2 CONFIG QUIET PATHS "${ONEDNN_ROOT}" NO_DEFAULT_PATH)
  if(NOT dnnl_FOUND)
    include("${CMAKE_CURRENT_LIST_DIR}/onednn_by_files.cmake")
  endif()
else()
  # The build environment's prefix (pip's isolated environment) holds the wheel.
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c "import sys; print(sys.prefix)"
    OUTPUT_VARIABLE _onednn_graph_prefix OUTPUT_STRIP_TRAILING_WHITESPACE)
  find_package(dnnl 3.2 CONFIG REQUIRED HINTS "${_onednn_graph_prefix}")
endif()

get_target_property(_onednn_graph_dnnl_includes DNNL::dnnl INTERFACE_INCLUDE_DIRECTORIES)
list(GET _onednn_graph_dnnl_includes 0 _onednn_graph_dnnl_include)
if(NOT EXISTS "${_onednn_graph_dnnl_include}/oneapi/dnnl/dnnl_graph.hpp")
  message(FATAL_ERROR "oneDNN at ${_onednn_graph_dnnl_include} has no Graph API (oneapi/dnnl/dnnl_graph.hpp)")
endif()

file(STRINGS "${_onednn_graph_dnnl_include}/oneapi/dnnl/dnnl_config.h" _onednn_graph_cpu_runtime
     REGEX "^#define DNNL_CPU_RUNTIME ")
if(_onednn_graph_cpu_runtime MATCHES "DNNL_RUNTIME_SYCL")
  set(ONEDNN_GRAPH_SYCL ON)
else()
  set(ONEDNN_GRAPH_SYCL OFF)
endif()
message(STATUS "oneDNN ${dnnl_VERSION} (${_onednn_graph_cpu_runtime}) from ${_onednn_graph_dnnl_include}")

if(ONEDNN_ROOT)
  get_target_property(_onednn_graph_dnnl_lib DNNL::dnnl IMPORTED_LOCATION_RELEASE)
  if(NOT _onednn_graph_dnnl_lib)
    get_target_property(_onednn_graph_dnnl_lib DNNL::dnnl IMPORTED_LOCATION)
  endif()
  get_filename_component(_onednn_graph_dnnl_libdir "${_onednn_graph_dnnl_lib}" DIRECTORY)
  set(ONEDNN_GRAPH_RPATH "${_onednn_graph_dnnl_libdir}")
  set(ONEDNN_GRAPH_LIBDIR "${_onednn_graph_dnnl_libdir}")
else()
  set(ONEDNN_GRAPH_RPATH "$ORIGIN/../../..")
  # pip's isolated build environment is somewhere new on every build (stable_paths.cmake)
  onednn_graph_headers_in_build_folder(DNNL::dnnl onednn)
  onednn_graph_library_in_build_folder(DNNL::dnnl onednn)
endif()

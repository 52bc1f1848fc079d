# Finds oneDNN (>= 3.2, with the Graph API) and sets the install RPATH of the
# extension so that it finds libdnnl.so.3 without LD_LIBRARY_PATH.
#
# Default: the onednn-devel-cpu-gomp wheel installed in the build environment
# (its CMake config lives in <prefix>/lib/cmake/dnnl). The runtime library comes
# from the onednn-cpu-gomp wheel, which installs libdnnl.so.3 into the
# environment's lib/ directory: <prefix>/lib, three levels above
# <prefix>/lib/pythonX.Y/site-packages/onednn_graph/_core*.so.
#
# Another oneDNN: set ONEDNN_ROOT (CMake cache variable or environment variable)
# to its install prefix; the extension then links it and records its absolute
# library directory in the RPATH.

set(ONEDNN_ROOT "$ENV{ONEDNN_ROOT}" CACHE PATH "Install prefix of a oneDNN >= 3.2 to build against")

if(ONEDNN_ROOT)
  find_package(dnnl 3.2 CONFIG REQUIRED PATHS "${ONEDNN_ROOT}" NO_DEFAULT_PATH)
else()
  # The build environment's prefix (pip's isolated environment) holds the wheel.
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c "import sys; print(sys.prefix)"
    OUTPUT_VARIABLE _onednn_graph_prefix OUTPUT_STRIP_TRAILING_WHITESPACE)
  find_package(dnnl 3.2 CONFIG REQUIRED HINTS "${_onednn_graph_prefix}")
endif()

get_target_property(_onednn_graph_dnnl_includes DNNL::dnnl INTERFACE_INCLUDE_DIRECTORIES)
if(NOT EXISTS "${_onednn_graph_dnnl_includes}/oneapi/dnnl/dnnl_graph.hpp")
  message(FATAL_ERROR "oneDNN at ${dnnl_DIR} has no Graph API (oneapi/dnnl/dnnl_graph.hpp)")
endif()
message(STATUS "oneDNN ${dnnl_VERSION} from ${dnnl_DIR}")

if(ONEDNN_ROOT)
  get_target_property(_onednn_graph_dnnl_lib DNNL::dnnl IMPORTED_LOCATION_RELEASE)
  get_filename_component(_onednn_graph_dnnl_libdir "${_onednn_graph_dnnl_lib}" DIRECTORY)
  set(ONEDNN_GRAPH_RPATH "${_onednn_graph_dnnl_libdir}")
else()
  set(ONEDNN_GRAPH_RPATH "$ORIGIN/../../..")
endif()

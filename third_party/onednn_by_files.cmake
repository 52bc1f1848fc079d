# DNNL::dnnl from an install prefix that has oneDNN's headers and library but no
# CMake package config (PyPI's onednn-devel 2026.x). Included by onednn.cmake with
# ONEDNN_ROOT set; sets dnnl_VERSION from oneapi/dnnl/dnnl_version.h.

find_path(_onednn_graph_by_files_include oneapi/dnnl/dnnl_graph.hpp
          PATHS "${ONEDNN_ROOT}/include" NO_DEFAULT_PATH)
find_library(_onednn_graph_by_files_lib NAMES dnnl
             PATHS "${ONEDNN_ROOT}/lib" "${ONEDNN_ROOT}/lib64" NO_DEFAULT_PATH)
if(NOT _onednn_graph_by_files_include OR NOT _onednn_graph_by_files_lib)
  message(FATAL_ERROR "ONEDNN_ROOT=${ONEDNN_ROOT} holds neither a oneDNN CMake config "
                      "(lib/cmake/dnnl) nor include/oneapi/dnnl/dnnl_graph.hpp and lib/libdnnl.so")
endif()

set(dnnl_VERSION "")
foreach(_part MAJOR MINOR PATCH)
  file(STRINGS "${_onednn_graph_by_files_include}/oneapi/dnnl/dnnl_version.h" _line
       REGEX "^#define DNNL_VERSION_${_part} ")
  string(REGEX REPLACE "^#define DNNL_VERSION_${_part} +([0-9]+).*" "\\1" _number "${_line}")
  list(APPEND dnnl_VERSION "${_number}")
endforeach()
string(REPLACE ";" "." dnnl_VERSION "${dnnl_VERSION}")
if(dnnl_VERSION VERSION_LESS 3.2)
  message(FATAL_ERROR "oneDNN ${dnnl_VERSION} at ${ONEDNN_ROOT}: the package needs >= 3.2")
endif()

add_library(DNNL::dnnl SHARED IMPORTED)
set_target_properties(DNNL::dnnl PROPERTIES
  IMPORTED_LOCATION "${_onednn_graph_by_files_lib}"
  INTERFACE_INCLUDE_DIRECTORIES "${_onednn_graph_by_files_include}")

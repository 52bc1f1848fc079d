# The build requirements at paths that do not change from one pip build to the next.
#
# pip builds in a new isolated environment every time (/tmp/pip-build-env-XXXX/overlay):
# compiled against pybind11's and oneDNN's headers there, every object's command line
# changed on each `pip install .`, `pip install ".[test]"` or `pip wheel .`, so ninja
# compiled everything again, and the LTO link (pybind11's default) redid all the code
# generation. Copies in the build folder keep one path; configure_file rewrites a copy
# only when its content changed, so an unchanged tree compiles once and a new pybind11
# or oneDNN still recompiles what it should (ninja follows the copies' times).

# Points the imported `target`'s headers at a copy under <build>/requirements/<name>.
function(onednn_graph_headers_in_build_folder target name)
  get_target_property(_includes ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(_stable_includes "")
  set(_index 0)
  foreach(_include IN LISTS _includes)
    set(_copy "${CMAKE_BINARY_DIR}/requirements/${name}/include${_index}")
    file(GLOB_RECURSE _headers RELATIVE "${_include}" "${_include}/*")
    foreach(_header IN LISTS _headers)
      configure_file("${_include}/${_header}" "${_copy}/${_header}" COPYONLY)
    endforeach()
    list(APPEND _stable_includes "${_copy}")
    math(EXPR _index "${_index} + 1")
  endforeach()
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_stable_includes}")
endfunction()

# Points the imported shared library `target` at a copy under <build>/requirements/<name>
# (its file name kept, so the extension records the library's soname as before).
function(onednn_graph_library_in_build_folder target name)
  foreach(_property IMPORTED_LOCATION_RELEASE IMPORTED_LOCATION)
    get_target_property(_library ${target} ${_property})
    if(_library)
      get_filename_component(_file "${_library}" NAME)
      set(_copy "${CMAKE_BINARY_DIR}/requirements/${name}/lib/${_file}")
      configure_file("${_library}" "${_copy}" COPYONLY)
      set_target_properties(${target} PROPERTIES ${_property} "${_copy}")
    endif()
  endforeach()
endfunction()

# Refuses includes that climb out of their folder ("../"): they would reach another module's
# internal headers past the include paths that keep each module's headers its own (see the
# layering note in CMakeLists.txt).
#
# Run at configure time (include()) and as the `layering` test:
#   cmake -DSTEPSCOPE_CHECK_ROOT=<source dir> -P cmake/check_includes.cmake
if(NOT STEPSCOPE_CHECK_ROOT)
  set(STEPSCOPE_CHECK_ROOT "${CMAKE_SOURCE_DIR}")
endif()

set(_globs)
foreach(dir include src tests python/src bench fuzz tools)
  foreach(ext cpp hpp h cc)
    list(APPEND _globs "${STEPSCOPE_CHECK_ROOT}/${dir}/*.${ext}")
  endforeach()
endforeach()
file(GLOB_RECURSE _files ${_globs})

set(_bad)
foreach(f ${_files})
  file(STRINGS "${f}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][^\">]*\\.\\./")
  foreach(line ${_lines})
    file(RELATIVE_PATH rel "${STEPSCOPE_CHECK_ROOT}" "${f}")
    string(STRIP "${line}" line)
    list(APPEND _bad "  ${rel}: ${line}")
  endforeach()
endforeach()

if(_bad)
  list(JOIN _bad "\n" _text)
  message(FATAL_ERROR "includes that climb out of their folder (use a public header in include/stepscope, "
                      "or the module's own \"<module>/x.hpp\"):\n${_text}")
endif()

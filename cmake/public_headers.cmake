# The public headers' manifest (CMakeLists.txt) turned into one include root per module.
#
# Every header of include/stepscope/ belongs to exactly one module, the lowest module whose code
# needs its types. stepscope_public_roots() gives each module a folder of its own in the build
# tree, ${CMAKE_BINARY_DIR}/public/<module>/stepscope/, holding a symbolic link to each header it
# owns (and nothing else), and stepscope_module() puts that folder on the module's include path,
# PUBLIC. A module therefore sees its own headers and those of the modules it links, and a header
# of a module above it is not found:
#   stepscope_headers(facts facts.hpp)       -> public/facts/stepscope/facts.hpp
#   stepscope_headers(pipeline pipeline.hpp) -> public/pipeline/stepscope/pipeline.hpp
#   src/facts/x.cpp: #include "stepscope/pipeline.hpp"   -> "No such file or directory"
# The headers stay where they are in the source tree; only the build sees them split.

# `link` made a symbolic link to `target` (its folder made first), unless it already is one.
function(stepscope_symlink target link)
  if(IS_SYMLINK "${link}")
    file(READ_SYMLINK "${link}" current)
    if(current STREQUAL target)
      return()
    endif()
    file(REMOVE "${link}")
  endif()
  get_filename_component(dir "${link}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  file(CREATE_LINK "${target}" "${link}" RESULT failed SYMBOLIC)
  if(failed)
    message(FATAL_ERROR "cannot link ${link} to ${target}: ${failed}")
  endif()
endfunction()

# stepscope_headers(MODULE HEADER...): HEADER (a path below include/stepscope/) belongs to MODULE.
# The manifest lists modules from the bottom up, and a module may have several lines.
function(stepscope_headers module)
  get_property(modules GLOBAL PROPERTY STEPSCOPE_HEADER_MODULES)
  if(NOT module IN_LIST modules)
    set_property(GLOBAL APPEND PROPERTY STEPSCOPE_HEADER_MODULES ${module})
  endif()
  foreach(h ${ARGN})
    set_property(GLOBAL APPEND PROPERTY STEPSCOPE_HEADER_LINES "${h}|${module}")
  endforeach()
endfunction()

# The modules (in manifest order, so the lowest first) whose sources include stepscope/<header>:
# the owner a new header should get is the first of them.
function(stepscope_header_users header out)
  get_property(modules GLOBAL PROPERTY STEPSCOPE_HEADER_MODULES)
  set(users)
  foreach(m ${modules})
    file(GLOB_RECURSE srcs "${CMAKE_SOURCE_DIR}/src/${m}/*.cpp" "${CMAKE_SOURCE_DIR}/src/${m}/*.hpp")
    string(REPLACE "." "\\." pattern "stepscope/${header}")
    foreach(f ${srcs})
      file(STRINGS "${f}" hits REGEX "#[ \t]*include[ \t]*[\"<]${pattern}[\">]")
      if(hits)
        list(APPEND users ${m})
        break()
      endif()
    endforeach()
  endforeach()
  set(${out} "${users}" PARENT_SCOPE)
endfunction()

# Checks the manifest against include/stepscope/ and makes the roots. Stops the configure with the
# line to add (or remove) when a header has no owner, two owners, or no file.
function(stepscope_public_roots)
  get_property(lines GLOBAL PROPERTY STEPSCOPE_HEADER_LINES)
  set(inc "${CMAKE_SOURCE_DIR}/include/stepscope")
  file(GLOB_RECURSE present CONFIGURE_DEPENDS RELATIVE "${inc}" "${inc}/*.hpp" "${inc}/*.h")
  set(errors)
  set(owned)
  foreach(line ${lines})
    string(REPLACE "|" ";" pair "${line}")
    list(GET pair 0 h)
    list(GET pair 1 m)
    if(h IN_LIST owned)
      list(APPEND errors "  stepscope/${h} is listed twice in the header manifest (CMakeLists.txt). Keep only the line of the lowest module whose code needs its types")
    elseif(NOT h IN_LIST present)
      list(APPEND errors "  stepscope/${h} is in the header manifest (CMakeLists.txt) but not in include/stepscope/. Remove it from the line stepscope_headers(${m} ...)")
    endif()
    list(APPEND owned "${h}")
    set(owner_${m} ${owner_${m}} "${h}")
  endforeach()
  foreach(h ${present})
    if(NOT h IN_LIST owned)
      stepscope_header_users("${h}" users)
      if(users)
        list(GET users 0 lowest)
        list(JOIN users ", " names)
        list(APPEND errors "  include/stepscope/${h} belongs to no module (included by: ${names}). Add this line to the header manifest in CMakeLists.txt:\n    stepscope_headers(${lowest} ${h})")
      else()
        list(APPEND errors "  include/stepscope/${h} belongs to no module. Add this line to the header manifest in CMakeLists.txt, naming the lowest module whose code needs its types:\n    stepscope_headers(<module> ${h})")
      endif()
    endif()
  endforeach()
  if(errors)
    list(JOIN errors "\n" text)
    message(FATAL_ERROR "public headers (see cmake/public_headers.cmake):\n${text}")
  endif()

  # Links no longer in the manifest go (a header given to another module, or deleted).
  set(root "${CMAKE_BINARY_DIR}/public")
  file(GLOB_RECURSE existing LIST_DIRECTORIES false RELATIVE "${root}" "${root}/*")
  get_property(modules GLOBAL PROPERTY STEPSCOPE_HEADER_MODULES)
  foreach(rel ${existing})
    string(REGEX MATCH "^([^/]+)/stepscope/(.+)$" _ "${rel}")
    if(NOT CMAKE_MATCH_2 IN_LIST owner_${CMAKE_MATCH_1})
      file(REMOVE "${root}/${rel}")
    endif()
  endforeach()
  foreach(m ${modules})
    file(MAKE_DIRECTORY "${root}/${m}/stepscope")
    foreach(h ${owner_${m}})
      stepscope_symlink("${inc}/${h}" "${root}/${m}/stepscope/${h}")
    endforeach()
  endforeach()
endfunction()

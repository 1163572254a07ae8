# Script mode: embed every RUNTIME_DIR/*.py into OUTPUT as
#   namespace graphmend::runtime { inline constexpr std::string_view <stem>_py = R"GMRAW(...)GMRAW"; }
# Usage: cmake -DRUNTIME_DIR=<dir> -DOUTPUT=<header> -P cmake/EmbedRuntime.cmake
# g++ has no practical limit on raw string length, so each file is one literal.

if(NOT RUNTIME_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "EmbedRuntime.cmake needs -DRUNTIME_DIR=... -DOUTPUT=...")
endif()

set(delim "GMRAW")
file(GLOB sources "${RUNTIME_DIR}/*.py")
list(SORT sources)

set(text "// Generated from src/runtime/*.py by cmake/EmbedRuntime.cmake. Do not edit.\n")
string(APPEND text "#pragma once\n\n#include <string_view>\n\nnamespace graphmend::runtime {\n")
foreach(py IN LISTS sources)
  get_filename_component(stem "${py}" NAME_WLE)
  if(NOT stem MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${py}: file name is not a C++ identifier; cannot embed it")
  endif()
  file(READ "${py}" body)
  string(FIND "${body}" ")${delim}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${py} contains the raw-string terminator )${delim}\"")
  endif()
  string(APPEND text "\ninline constexpr std::string_view ${stem}_py = R\"${delim}(${body})${delim}\";\n")
endforeach()
string(APPEND text "\n}  // namespace graphmend::runtime\n")

file(WRITE "${OUTPUT}" "${text}")

# Script mode: embed the text file INPUT into OUTPUT as
#   namespace NAMESPACE { inline constexpr std::string_view NAME = R"GMRAW(...)GMRAW"; }
# with NAMESPACE graphmend::analysis::table unless given.
# Usage: cmake -DINPUT=<file> -DNAME=<identifier> -DOUTPUT=<header> [-DNAMESPACE=<ns>] -P cmake/EmbedTable.cmake

if(NOT INPUT OR NOT OUTPUT OR NOT NAME)
  message(FATAL_ERROR "EmbedTable.cmake needs -DINPUT=... -DNAME=... -DOUTPUT=...")
endif()

if(NOT NAMESPACE)
  set(NAMESPACE "graphmend::analysis::table")
endif()
set(delim "GMRAW")
file(READ "${INPUT}" body)
string(FIND "${body}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string terminator )${delim}\"")
endif()
set(text "// Generated from ${INPUT} by cmake/EmbedTable.cmake. Do not edit.\n")
string(APPEND text "#pragma once\n\n#include <string_view>\n\nnamespace ${NAMESPACE} {\n")
string(APPEND text "\ninline constexpr std::string_view ${NAME} = R\"${delim}(${body})${delim}\";\n")
string(APPEND text "\n}  // namespace ${NAMESPACE}\n")
file(WRITE "${OUTPUT}" "${text}")

# Script mode: embed the text file INPUT into OUTPUT as
#   namespace graphmend::analysis::table { inline constexpr std::string_view NAME = R"GMRAW(...)GMRAW"; }
# Usage: cmake -DINPUT=<file> -DNAME=<identifier> -DOUTPUT=<header> -P cmake/EmbedTable.cmake

if(NOT INPUT OR NOT OUTPUT OR NOT NAME)
  message(FATAL_ERROR "EmbedTable.cmake needs -DINPUT=... -DNAME=... -DOUTPUT=...")
endif()

set(delim "GMRAW")
file(READ "${INPUT}" body)
string(FIND "${body}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string terminator )${delim}\"")
endif()
set(text "// Generated from ${INPUT} by cmake/EmbedTable.cmake. Do not edit.\n")
string(APPEND text "#pragma once\n\n#include <string_view>\n\nnamespace graphmend::analysis::table {\n")
string(APPEND text "\ninline constexpr std::string_view ${NAME} = R\"${delim}(${body})${delim}\";\n")
string(APPEND text "\n}  // namespace graphmend::analysis::table\n")
file(WRITE "${OUTPUT}" "${text}")

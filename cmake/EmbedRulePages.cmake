# Script mode: embed every PAGES_DIR/GM*.md (the rule pages, named by rule code) into
# OUTPUT, a header holding, in namespace graphmend::output::embedded:
#   struct Page { code; text; };  kPages, the table {code, text} in code order.
# `graphmend rule` prints them (src/output/rule_pages.cpp).
# Usage: cmake -DPAGES_DIR=<dir> -DOUTPUT=<header> -P cmake/EmbedRulePages.cmake

if(NOT PAGES_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "EmbedRulePages.cmake needs -DPAGES_DIR=... -DOUTPUT=...")
endif()

set(delim "GMRAW")
file(GLOB pages "${PAGES_DIR}/GM*.md")
list(SORT pages)
list(LENGTH pages count)
if(count EQUAL 0)
  message(FATAL_ERROR "no rule pages (GM*.md) in ${PAGES_DIR}")
endif()

set(rows "")
foreach(md IN LISTS pages)
  get_filename_component(code "${md}" NAME_WLE)
  if(NOT code MATCHES "^GM[0-9]+$")
    message(FATAL_ERROR "${md}: a rule page is named by its rule code, e.g. GM101.md")
  endif()
  file(READ "${md}" body)
  string(FIND "${body}" ")${delim}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${md} contains the raw-string terminator )${delim}\"")
  endif()
  string(APPEND rows "    Page{\"${code}\", R\"${delim}(${body})${delim}\"},\n")
endforeach()

set(text "// Generated from docs/rules/GM*.md by cmake/EmbedRulePages.cmake. Do not edit.\n")
string(APPEND text "#pragma once\n\n#include <array>\n#include <string_view>\n\n")
string(APPEND text "namespace graphmend::output::embedded {\n\n")
string(APPEND text "struct Page {\n    std::string_view code;  // the file's stem: GM101\n    std::string_view text;\n};\n\n")
string(APPEND text "/// Every page of docs/rules/, in code order.\n")
string(APPEND text "inline constexpr std::array<Page, ${count}> kPages{\n${rows}};\n")
string(APPEND text "\n}  // namespace graphmend::output::embedded\n")
file(WRITE "${OUTPUT}" "${text}")

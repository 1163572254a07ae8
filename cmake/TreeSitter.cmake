# tree-sitter core 0.24.7 (from the tree-sitter==0.24.0 sdist) + tree-sitter-python 0.23.6
# grammar (ABI 14), both fetched into .deps/ by scripts/setup.sh. See REFERENCE.md §3.
#
# Provides the static library target `tree_sitter_python` (C11), whose public include dir
# carries <tree_sitter/api.h>. Declare the grammar entry point yourself:
#   extern "C" const TSLanguage *tree_sitter_python(void);

set(GRAPHMEND_DEPS_DIR "${CMAKE_SOURCE_DIR}/.deps")
set(TS_CORE_DIR "${GRAPHMEND_DEPS_DIR}/tree-sitter-0.24.0/tree_sitter/core/lib")
set(TS_GRAMMAR_DIR "${GRAPHMEND_DEPS_DIR}/tree_sitter_python-0.23.6/src")
set(TS_GRAMMAR_INCLUDE "${GRAPHMEND_DEPS_DIR}/grammar-include")

foreach(required IN ITEMS
    "${TS_CORE_DIR}/src/lib.c"
    "${TS_CORE_DIR}/include/tree_sitter/api.h"
    "${TS_GRAMMAR_DIR}/parser.c"
    "${TS_GRAMMAR_DIR}/scanner.c"
    "${TS_GRAMMAR_INCLUDE}/tree_sitter/parser.h")
  if(NOT EXISTS "${required}")
    message(FATAL_ERROR
      "tree-sitter sources missing (${required}).\n"
      "Run scripts/setup.sh from the repository root to fetch them into .deps/.")
  endif()
endforeach()

# Core runtime: lib.c is a unity file that #includes every other lib/src/*.c.
add_library(ts_core OBJECT "${TS_CORE_DIR}/src/lib.c")
target_include_directories(ts_core PRIVATE "${TS_CORE_DIR}/include" "${TS_CORE_DIR}/src")
target_compile_definitions(ts_core PRIVATE _POSIX_C_SOURCE=200112L _DEFAULT_SOURCE)

# Python grammar: parser.c/scanner.c include "tree_sitter/{parser,array,alloc}.h", staged
# from the core's lib/src into .deps/grammar-include by setup.sh.
add_library(ts_grammar_python OBJECT "${TS_GRAMMAR_DIR}/parser.c" "${TS_GRAMMAR_DIR}/scanner.c")
target_include_directories(ts_grammar_python PRIVATE "${TS_GRAMMAR_INCLUDE}" "${TS_GRAMMAR_DIR}")

foreach(t IN ITEMS ts_core ts_grammar_python)
  set_target_properties(${t} PROPERTIES
    C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
    POSITION_INDEPENDENT_CODE ON)
  # Third-party code: silence its warnings (e.g. glibc's _DEFAULT_SOURCE redefining the
  # _POSIX_C_SOURCE that lib/src/parser.c sets) so ours stand out.
  target_compile_options(${t} PRIVATE -w)
endforeach()

add_library(tree_sitter_python STATIC
  $<TARGET_OBJECTS:ts_core> $<TARGET_OBJECTS:ts_grammar_python>)
set_target_properties(tree_sitter_python PROPERTIES LINKER_LANGUAGE C)
# SYSTEM: keep third-party headers out of our -Wall -Wextra -Wpedantic output.
target_include_directories(tree_sitter_python SYSTEM PUBLIC "${TS_CORE_DIR}/include")

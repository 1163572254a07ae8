# tree-sitter core 0.24.7 (from the tree-sitter==0.24.0 sdist) + tree-sitter-python 0.23.6
# grammar (ABI 14), from the pinned PyPI sdists. See docs/reference.md §3.
#
# Where the sources come from:
#   - GRAPHMEND_DEPS_DIR (default .deps/, where scripts/setup.sh extracts them), when it holds them;
#   - else they are fetched into the build tree (<build>/tree-sitter-deps/): pip downloads the
#     same pinned sdists, CMake checks their sha256 and extracts them. So `pip install .` and
#     `cmake -S . -B build` work from a clean clone; nothing is written into the source tree.
#
# Provides the static library target `tree_sitter_python` (C11), whose public include dir
# carries <tree_sitter/api.h>. Declare the grammar entry point yourself:
#   extern "C" const TSLanguage *tree_sitter_python(void);

set(GRAPHMEND_DEPS_DIR "${CMAKE_SOURCE_DIR}/.deps" CACHE PATH
    "tree-sitter sources as scripts/setup.sh lays them out; fetched into the build tree when absent")

# The pinned sdists: requirement, file, sha256 (the same pins as scripts/setup.sh).
set(TS_CORE_SDIST "tree-sitter==0.24.0" "tree-sitter-0.24.0.tar.gz"
    "abd95af65ca2f4f7eca356343391ed669e764f37748b5352946f00f7fc78e734")
set(TS_GRAMMAR_SDIST "tree-sitter-python==0.23.6" "tree_sitter_python-0.23.6.tar.gz"
    "354bfa0a2f9217431764a631516f85173e9711af2c13dbd796a8815acfe505d9")

function(_ts_layout deps)  # sets TS_CORE_DIR, TS_GRAMMAR_DIR, TS_GRAMMAR_INCLUDE in the caller
  set(TS_CORE_DIR "${deps}/tree-sitter-0.24.0/tree_sitter/core/lib" PARENT_SCOPE)
  set(TS_GRAMMAR_DIR "${deps}/tree_sitter_python-0.23.6/src" PARENT_SCOPE)
  set(TS_GRAMMAR_INCLUDE "${deps}/grammar-include" PARENT_SCOPE)
endfunction()

function(_ts_missing out)  # the first required source that is missing, or ""
  foreach(required IN ITEMS
      "${TS_CORE_DIR}/src/lib.c"
      "${TS_CORE_DIR}/include/tree_sitter/api.h"
      "${TS_GRAMMAR_DIR}/parser.c"
      "${TS_GRAMMAR_DIR}/scanner.c"
      "${TS_GRAMMAR_INCLUDE}/tree_sitter/parser.h")
    if(NOT EXISTS "${required}")
      set(${out} "${required}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# pip downloads the sdists into `dir`. It runs with the interpreter's own environment
# (PYTHONPATH unset): under `pip install .`, the isolated build environment hides pip.
function(_ts_pip_download dir)
  set(pythons "")
  foreach(var IN ITEMS Python_EXECUTABLE Python3_EXECUTABLE)
    if(${var})
      list(APPEND pythons "${${var}}")
    endif()
  endforeach()
  find_program(GRAPHMEND_PYTHON3 NAMES python3 python)
  if(GRAPHMEND_PYTHON3)
    list(APPEND pythons "${GRAPHMEND_PYTHON3}")
  endif()
  list(REMOVE_DUPLICATES pythons)
  set(errors "")
  foreach(python IN LISTS pythons)
    message(STATUS "tree-sitter: ${python} -m pip download ${TS_CORE_SDIST_REQ} ${TS_GRAMMAR_SDIST_REQ}")
    execute_process(
      COMMAND "${CMAKE_COMMAND}" -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE
              "${python}" -m pip download --no-binary :all: --no-deps --disable-pip-version-check
              "${TS_CORE_SDIST_REQ}" "${TS_GRAMMAR_SDIST_REQ}" -d "${dir}"
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(rc EQUAL 0)
      return()
    endif()
    string(APPEND errors "\n${python} -m pip download failed (${rc}):\n${out}${err}")
  endforeach()
  message(FATAL_ERROR
    "tree-sitter sources missing and could not be downloaded.${errors}\n"
    "Run scripts/setup.sh (it fetches them into .deps/), or point -DGRAPHMEND_DEPS_DIR at "
    "a folder laid out as .deps/ is.")
endfunction()

# Fetches, checks and extracts both sdists into `deps`, then stages the headers the grammar
# includes as "tree_sitter/parser.h" (its sdist lacks them) from the core into grammar-include.
function(_ts_fetch deps)
  list(GET TS_CORE_SDIST 0 TS_CORE_SDIST_REQ)
  list(GET TS_GRAMMAR_SDIST 0 TS_GRAMMAR_SDIST_REQ)
  foreach(sdist IN ITEMS TS_CORE_SDIST TS_GRAMMAR_SDIST)
    list(GET ${sdist} 1 file)
    list(GET ${sdist} 2 expected)
    set(archive "${deps}/dl/${file}")
    set(actual "")
    if(EXISTS "${archive}")
      file(SHA256 "${archive}" actual)
    endif()
    if(NOT actual STREQUAL expected)
      file(REMOVE "${archive}")
      _ts_pip_download("${deps}/dl")
      file(SHA256 "${archive}" actual)
      if(NOT actual STREQUAL expected)
        file(REMOVE "${archive}")
        message(FATAL_ERROR "sha256 mismatch for ${file}: expected ${expected}, got ${actual}")
      endif()
    endif()
    file(ARCHIVE_EXTRACT INPUT "${archive}" DESTINATION "${deps}")
  endforeach()
  _ts_layout("${deps}")
  foreach(h IN ITEMS parser.h array.h alloc.h ts_assert.h)
    file(COPY "${TS_CORE_DIR}/src/${h}" DESTINATION "${TS_GRAMMAR_INCLUDE}/tree_sitter")
  endforeach()
endfunction()

_ts_layout("${GRAPHMEND_DEPS_DIR}")
_ts_missing(missing)
if(missing)
  set(fetched "${CMAKE_BINARY_DIR}/tree-sitter-deps")
  _ts_layout("${fetched}")
  _ts_missing(missing)
  if(missing)
    message(STATUS "tree-sitter: no sources in ${GRAPHMEND_DEPS_DIR}; fetching the pinned sdists into ${fetched}")
    _ts_fetch("${fetched}")
    _ts_layout("${fetched}")
    _ts_missing(missing)
    if(missing)
      message(FATAL_ERROR "tree-sitter sources missing after extraction (${missing})")
    endif()
  endif()
endif()
message(STATUS "tree-sitter: sources from ${TS_CORE_DIR} and ${TS_GRAMMAR_DIR}")

# Core runtime: lib.c is a unity file that #includes every other lib/src/*.c.
add_library(ts_core OBJECT "${TS_CORE_DIR}/src/lib.c")
target_include_directories(ts_core PRIVATE "${TS_CORE_DIR}/include" "${TS_CORE_DIR}/src")
target_compile_definitions(ts_core PRIVATE _POSIX_C_SOURCE=200112L _DEFAULT_SOURCE)

# Python grammar: parser.c/scanner.c include "tree_sitter/{parser,array,alloc}.h", staged
# from the core's lib/src into grammar-include (by setup.sh, or by _ts_fetch above).
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

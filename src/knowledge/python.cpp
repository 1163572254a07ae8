// Python builtins and container methods: see include/graphmend/knowledge.hpp. Where each entry
// is defined (Where) is checked against Python 3.11 by tests/python/test_knowledge.py.
#include "table.hpp"

namespace graphmend::knowledge {

namespace {

// Python builtins that have no effect on the values a model passes them: they write no state and
// do no I/O (Python 3.11's builtins, docs: library/functions.html). GM201 (a branch a select
// runs on both paths), rules/support/rowwise.cpp (what a loop rewritten to run for all rows may
// call) and row_layout_names.cpp (what a row layout's static form may call when no row is
// picked) kept three lists of this fact: each lacked some of the others' (rowwise's all, any,
// enumerate, reversed, round, sum and zip; the row layout's all, any, reversed, slice and str;
// GM201's slice).
constexpr auto kPureBuiltins = std::to_array<Name>({
    {"abs", kBuiltin}, {"all", kBuiltin}, {"any", kBuiltin}, {"bool", kBuiltin}, {"enumerate", kBuiltin},
    {"float", kBuiltin}, {"getattr", kBuiltin}, {"hasattr", kBuiltin}, {"int", kBuiltin},
    {"isinstance", kBuiltin}, {"len", kBuiltin}, {"list", kBuiltin}, {"max", kBuiltin}, {"min", kBuiltin},
    {"range", kBuiltin}, {"reversed", kBuiltin}, {"round", kBuiltin}, {"slice", kBuiltin}, {"str", kBuiltin},
    {"sum", kBuiltin}, {"tuple", kBuiltin}, {"zip", kBuiltin},
});
static_assert(detail::sorted(kPureBuiltins));

// Builtins a model calls, told apart from the project's functions (GM503). Source: Python 3.11's
// builtins.
constexpr auto kCommonBuiltins = std::to_array<Name>({
    {"abs", kBuiltin}, {"all", kBuiltin}, {"any", kBuiltin}, {"bool", kBuiltin}, {"callable", kBuiltin},
    {"dict", kBuiltin}, {"enumerate", kBuiltin}, {"filter", kBuiltin}, {"float", kBuiltin},
    {"format", kBuiltin}, {"getattr", kBuiltin}, {"hasattr", kBuiltin}, {"id", kBuiltin}, {"int", kBuiltin},
    {"isinstance", kBuiltin}, {"iter", kBuiltin}, {"len", kBuiltin}, {"list", kBuiltin}, {"map", kBuiltin},
    {"max", kBuiltin}, {"min", kBuiltin}, {"next", kBuiltin}, {"print", kBuiltin}, {"range", kBuiltin},
    {"repr", kBuiltin}, {"reversed", kBuiltin}, {"round", kBuiltin}, {"set", kBuiltin}, {"setattr", kBuiltin},
    {"sorted", kBuiltin}, {"str", kBuiltin}, {"sum", kBuiltin}, {"super", kBuiltin}, {"tuple", kBuiltin},
    {"type", kBuiltin}, {"zip", kBuiltin},
});
static_assert(detail::sorted(kCommonBuiltins));

// List methods that leave the list as it is. Source: Python 3.11's list (docs: tutorial
// datastructures.html).
constexpr auto kListReads = std::to_array<Name>({
    {"copy", kList}, {"count", kList}, {"index", kList},
});
static_assert(detail::sorted(kListReads));

// Methods that change their receiver: of lists, dicts, sets (Python 3.11), a file's `write`, and
// nn.Module's methods that add to it or change every submodule (torch 2.12.1's
// torch/nn/modules/module.py).
constexpr auto kMutatingMethods = std::to_array<Name>({
    {"add", kSet}, {"add_module", kNnModule}, {"append", kList}, {"apply", kNnModule}, {"clear", kList},
    {"discard", kSet}, {"extend", kList}, {"insert", kList}, {"pop", kList}, {"register_buffer", kNnModule},
    {"register_parameter", kNnModule}, {"remove", kList}, {"setdefault", kDict}, {"update", kDict},
    {"write", kFile},
});
static_assert(detail::sorted(kMutatingMethods));

// Builtin classes a class may derive from (never an nn.Module); besides these, any name ending
// in Error, Exception or Warning. Source: Python 3.11's builtins.
constexpr auto kBuiltinClasses = std::to_array<Name>({
    {"BaseExceptionGroup", kBuiltin}, {"ExceptionGroup", kBuiltin}, {"bytearray", kBuiltin},
    {"bytes", kBuiltin}, {"classmethod", kBuiltin}, {"complex", kBuiltin}, {"dict", kBuiltin},
    {"float", kBuiltin}, {"frozenset", kBuiltin}, {"int", kBuiltin}, {"list", kBuiltin},
    {"memoryview", kBuiltin}, {"object", kBuiltin}, {"property", kBuiltin}, {"range", kBuiltin},
    {"set", kBuiltin}, {"slice", kBuiltin}, {"staticmethod", kBuiltin}, {"str", kBuiltin},
    {"super", kBuiltin}, {"tuple", kBuiltin}, {"type", kBuiltin},
});
static_assert(detail::sorted(kBuiltinClasses));

// Packages outside the inputs whose classes graphmend knows to be nn.Modules or not: torch and the
// standard library modules (Python 3.11) that classes come from.
constexpr auto kKnownPackages = std::to_array<Name>({
    {"abc", kDotted}, {"argparse", kDotted}, {"ast", kDotted}, {"asyncio", kDotted}, {"builtins", kDotted},
    {"collections", kDotted}, {"concurrent", kDotted}, {"contextlib", kDotted}, {"copy", kDotted},
    {"ctypes", kDotted}, {"dataclasses", kDotted}, {"enum", kDotted}, {"functools", kDotted},
    {"http", kDotted}, {"inspect", kDotted}, {"io", kDotted}, {"json", kDotted}, {"logging", kDotted},
    {"multiprocessing", kDotted}, {"numbers", kDotted}, {"os", kDotted}, {"pathlib", kDotted},
    {"pickle", kDotted}, {"queue", kDotted}, {"socketserver", kDotted}, {"string", kDotted},
    {"threading", kDotted}, {"torch", kDotted}, {"types", kDotted}, {"typing", kDotted},
    {"typing_extensions", kDotted}, {"unittest", kDotted}, {"warnings", kDotted}, {"weakref", kDotted},
});
static_assert(detail::sorted(kKnownPackages));

}  // namespace

bool pure_builtin(std::string_view name) { return detail::listed(kPureBuiltins, name); }
bool common_builtin(std::string_view name) { return detail::listed(kCommonBuiltins, name); }
bool list_read(std::string_view name) { return detail::listed(kListReads, name); }
bool mutating_method(std::string_view name) { return detail::listed(kMutatingMethods, name); }

bool builtin_class(std::string_view name) {
    return detail::listed(kBuiltinClasses, name) || name.ends_with("Error") || name.ends_with("Exception") ||
           name.ends_with("Warning");
}

bool known_package(std::string_view top_level) { return detail::listed(kKnownPackages, top_level); }

namespace detail {

void add_python_tables(std::vector<Table>& out) {
    out.push_back(table("pure_builtins", "Python 3.11 builtins", kPureBuiltins));
    out.push_back(table("common_builtins", "Python 3.11 builtins", kCommonBuiltins));
    out.push_back(table("list_reads", "Python 3.11 list", kListReads));
    out.push_back(table("mutating_methods", "Python 3.11 list, dict, set, io; torch 2.12.1 nn.Module",
                        kMutatingMethods));
    out.push_back(table("builtin_classes", "Python 3.11 builtins", kBuiltinClasses));
    out.push_back(table("known_packages", "torch 2.12.1; Python 3.11 standard library", kKnownPackages));
}

}  // namespace detail

}  // namespace graphmend::knowledge

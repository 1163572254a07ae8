// Tests that read tensor values: see src/rules/support/tensor_test.hpp.
#include "tensor_test.hpp"

#include "graphmend/knowledge.hpp"

#include <fmt/format.h>

#include <functional>
#include <set>
#include <vector>

#include "graphmend/runtime_sources.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {


// `a is b` / `a is not b`: settled without reading tensor values.
bool identity_test(const Node& comparison) {
    bool only_is = true;
    for (const Node& c : comparison.children()) {
        if (!c.named() && !c.is("is") && !c.is("not") && !c.is("is not") && !c.is("(") &&
            !c.is(")")) {
            only_is = false;
        }
    }
    return only_is;
}

// `torch.is_autocast_enabled()`, `torch.is_tensor(x)`, `torch.get_default_dtype()`,
// `torch._C...`: queries of torch's state or of a value's type, which return Python values
// (as analysis/values.cpp models them), not tensors.
bool torch_state_query(std::string_view name) {
    return name.starts_with("is_") || name.starts_with("has_") || name.starts_with("get_") ||
           name.starts_with("set_") || name.starts_with("_");
}

}  // namespace

bool is_data_read(std::string_view name) { return knowledge::reads_values(name); }

std::set<std::string> tensor_locals(const Node& function, const analysis::Values& values, std::size_t file) {
    std::set<std::string> names;
    syntax::walk(function.field("body"), [&](const Node& n) {
        if (!n.is("assignment") || !n.field("left").is("identifier")) return true;
        bool tensorish = false;
        syntax::walk(n.field("right"), [&](const Node& r) {
            if (r.is("call")) {
                const Node fn = r.field("function");
                if (fn.is("attribute") &&
                    ((fn.field("object").text() == "torch" && !torch_state_query(fn.field("attribute").text())) ||
                     is_data_read(fn.field("attribute").text()))) {
                    tensorish = true;
                }
            }
            return !tensorish;
        });
        if (tensorish) {
            const analysis::Value v = values.eval(file, n.field("right"));
            tensorish = !(v.kinds != 0 && !v.tensor() && !(v.kinds & analysis::kUnknown) && !v.data);
        }
        if (tensorish) names.insert(text(n.field("left")));
        return true;
    });
    return names;
}

namespace {
bool reads_data_if(const Node& test, const std::set<std::string>& tensor_names,
                   const std::function<bool(const Node&)>& counts);
}  // namespace

bool reads_data(const Node& test, const std::set<std::string>& tensor_names) {
    return reads_data_if(test, tensor_names, [](const Node&) { return true; });
}

bool reads_data(const Node& test, const std::set<std::string>& tensor_names, const analysis::Values& values,
                std::size_t file) {
    return reads_data_if(test, tensor_names, [&](const Node& id) { return !values.narrowed_to_python(file, id); });
}

namespace {
// reads_data, counting the reads of tensor names that `counts` accepts.
bool reads_data_if(const Node& test, const std::set<std::string>& tensor_names,
                   const std::function<bool(const Node&)>& counts) {
    bool found = false;
    syntax::walk(test, [&](const Node& n) {
        if (found || n.is("lambda")) return false;
        if (n.is("call")) {
            const Node fn = n.field("function");
            if (fn.is("attribute") && is_data_read(fn.field("attribute").text())) {
                const Node object = fn.field("object");
                const std::string_view root = object.text();
                // A name narrowed to a Python value or a numpy array (`isinstance(x, np.ndarray)`)
                // reads no tensor data.
                if (root != "np" && root != "numpy" && root != "math" && !(object.is("identifier") && !counts(object))) {
                    found = true;
                }
            }
            if (fn.is("identifier") && (fn.text() == "float" || fn.text() == "int" || fn.text() == "bool")) {
                const auto args = n.field("arguments").named_children();
                if (args.size() == 1 && args[0].is("identifier") && tensor_names.contains(text(args[0])) &&
                    counts(args[0])) {
                    found = true;
                }
            }
        }
        if (n.is("identifier") && tensor_names.contains(text(n)) && is_read(n) && counts(n)) {
            const Node p = n.parent();
            if ((p.is("comparison_operator") && !identity_test(p)) || p.is("boolean_operator") ||
                p.is("not_operator") || p.is("if_statement") || p.is("elif_clause")) {
                found = true;
            }
        }
        return true;
    });
    return found;
}
}  // namespace

std::string predicate(const Node& test) {
    return rebuild(test, [](const Node& n) -> std::optional<std::string> {
        if (n.is("boolean_operator")) {
            const bool is_and = n.field("operator").text() == "and";
            return fmt::format("{}({}, lambda: {})", is_and ? runtime::name::and_ : runtime::name::or_,
                               predicate(n.field("left")),
                               predicate(n.field("right")));
        }
        if (n.is("not_operator")) return fmt::format("{}({})", runtime::name::not_, predicate(n.field("argument")));
        if (n.is("call")) {
            const Node fn = n.field("function");
            const auto args = n.field("arguments").named_children();
            if (fn.text() == "torch.equal" && args.size() == 2) {
                return fmt::format("{}({}, {})", runtime::name::equal, predicate(args[0]), predicate(args[1]));
            }
            if (fn.is("attribute") && fn.field("attribute").text() == "item" && args.empty()) {
                return fmt::format("{}(\"item\", {})", runtime::name::scalar, predicate(fn.field("object")));
            }
            if (fn.is("identifier") && (fn.text() == "float" || fn.text() == "int" || fn.text() == "bool" ||
                                        fn.text() == "any" || fn.text() == "all") &&
                args.size() == 1 && !args[0].is("keyword_argument") && !args[0].is("generator_expression") &&
                !args[0].is("list_splat")) {
                return fmt::format("{}(\"{}\", {})", runtime::name::scalar, fn.text(), predicate(args[0]));
            }
        }
        return std::nullopt;
    });
}

bool is_raise_check(const Node& stmt) {
    if (stmt.field("alternative")) return false;
    std::vector<Node> body;
    for (const Node& s : stmt.field("consequence").named_children()) {
        if (!s.is("comment")) body.push_back(s);
    }
    return body.size() == 1 && body[0].is("raise_statement");
}

}  // namespace graphmend::rules

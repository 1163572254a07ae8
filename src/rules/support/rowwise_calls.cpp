// RowFlow on calls and statements: project functions and modules followed into, and the
// locals that hold rows through a function's statements (see rowwise.cpp for what is row-wise,
// rowwise_flow.cpp for expressions).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "graphmend/analysis.hpp"
#include "graphmend/knowledge.hpp"
#include "rowwise_internal.hpp"
#include "site.hpp"

namespace graphmend::rules {

using syntax::Node;
using namespace rowwise_detail;

namespace {

// `torch.einsum("b,be->be", w, x)`: row-wise when every operand holding rows has the row
// letter first, the others do not have it, and the output keeps it first.
bool einsum_rowwise(const std::vector<Node>& args, const std::vector<bool>& row_args) {
    if (args.size() < 2 || !args[0].is("string")) return false;
    for (const Node& c : args[0].named_children()) {
        if (c.is("interpolation")) return false;
    }
    std::string eq(args[0].text());
    if (eq.size() < 2 || (eq.front() != '"' && eq.front() != '\'') || eq.find("...") != std::string::npos) return false;
    eq = eq.substr(1, eq.size() - 2);
    eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
    const auto arrow = eq.find("->");
    if (arrow == std::string::npos) return false;
    std::vector<std::string> inputs;
    std::string cur;
    for (char ch : eq.substr(0, arrow)) {
        if (ch == ',') {
            inputs.push_back(cur);
            cur.clear();
        } else {
            cur += ch;
        }
    }
    inputs.push_back(cur);
    const std::string out = eq.substr(arrow + 2);
    if (inputs.size() != args.size() - 1 || out.empty()) return false;
    const char row = out[0];
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const bool is_row = row_args[i + 1];
        if (is_row && (inputs[i].empty() || inputs[i][0] != row)) return false;
        if (!is_row && inputs[i].find(row) != std::string::npos) return false;
    }
    return true;
}

}  // namespace

std::optional<bool> RowFlow::call(const Node& e) {
    const Node fn = syntax::without_parens(e.field("function"));
    const auto args = e.field("arguments").named_children();
    std::vector<bool> row_args;
    for (const Node& a : args) {
        const Node v = a.is("keyword_argument") ? a.field("value") : a;
        if (a.is("list_splat") || a.is("dictionary_splat")) {
            if (holds_rows(a)) {
                fail(a, "rows passed through * or **");
                return std::nullopt;
            }
            row_args.push_back(false);
            continue;
        }
        const auto r = expr(v);
        if (!r) return std::nullopt;
        row_args.push_back(*r);
    }
    const bool any_row_arg = std::find(row_args.begin(), row_args.end(), true) != row_args.end();
    // A method of the rows.
    if (fn.is("attribute")) {
        const auto recv = expr(fn.field("object"));
        if (!recv) return std::nullopt;
        if (*recv) {
            const std::string m = text(fn.field("attribute"));
            if (knowledge::elementwise_method(m)) return true;
            if ((m == "matmul" || m == "mm") && !any_row_arg) return true;
            // `X[None, I].reshape(-1, D)`: the rows of a 2-D X back in one dimension (Mixtral's idiom).
            // Anywhere else a reshape can merge or split rows.
            const Node obj = syntax::without_parens(fn.field("object"));
            if ((m == "reshape" || m == "view") && args.size() == 2 && args[0].text() == "-1" && !any_row_arg &&
                obj.is("subscript") && obj.named_children().size() == 3 && obj.named_children()[1].is("none")) {
                return true;
            }
            if (m == "unsqueeze" && args.size() == 1 && (args[0].text() == "-1" ||
                                                         (args[0].is("integer") && args[0].text() != "0"))) {
                return true;
            }
            fail(e, fmt::format("`.{}()` on the rows is not known to work row by row", m));
            return std::nullopt;
        }
    }
    if (!any_row_arg) return false;  // computes on values that hold no rows
    // torch.X / F.X.
    const std::string ext = ctx_.project.external_name(file_, fn);
    if (ext.starts_with("torch.")) {
        const std::string_view leaf = last_part(ext);
        if (knowledge::elementwise_function(leaf)) return true;
        if (leaf == "einsum" && einsum_rowwise(args, row_args)) return true;
        if ((leaf == "linear" || leaf == "matmul" || leaf == "layer_norm" || leaf == "rms_norm") && row_args[0] &&
            std::count(row_args.begin(), row_args.end(), true) == 1) {
            return true;
        }
    }
    // A module or project function.
    if (fn.is("identifier") && known.contains(text(fn))) return callable(e, known.at(text(fn)), row_args);
    if (fn.is("identifier") && elements.contains(text(fn))) {
        const Callable list = callable_of(ctx_, file_, def_, owner_, elements.at(text(fn)), 0);
        if (list.kind == Callable::ListOf && list.element) return callable(e, *list.element, row_args);
    }
    const Callable c = callable_of(ctx_, file_, def_, owner_, fn, 0);
    return callable(e, c, row_args);
}

std::optional<bool> RowFlow::callable(const Node& e, const Callable& c, const std::vector<bool>& row_args) {
    switch (c.kind) {
        case Callable::Activation:
            return true;
        case Callable::External: {
            const std::string_view leaf = last_part(c.external);
            if (c.external.starts_with("torch.") && knowledge::rowwise_module(leaf) && row_args.size() == 1) return true;
            if (leaf == "Dropout" && c.external.starts_with("torch.") && row_args.size() == 1) {
                needs_eval = true;  // identity in eval mode; the static form then requires it
                return true;
            }
            if (leaf == "Dropout") {
                fail(e, "a Dropout: in training it draws a random number per element, so more rows change them");
            } else {
                fail(e, fmt::format("`{}` is not known to work row by row", c.external));
            }
            return std::nullopt;
        }
        case Callable::Class: {
            const auto forward = ctx_.project.find_method(c.file, c.cls, "forward");
            if (!forward) {
                fail(e, fmt::format("`{}` has no forward graphmend can read", c.cls));
                return std::nullopt;
            }
            // `self.NAME` in an inherited forward is what the class itself binds: its own
            // `__init__` may bind NAME again, or a method override the base's (the base's
            // bindings alone would miss it). Across files the base's file resolves the names, so
            // the base's class is the owner, and a class that changes what NAME means is refused.
            if (forward->file != c.file) {
                const std::string base = owner_of(forward->node);
                Node base_node;
                for (Node p = forward->node.parent(); p && !base_node; p = p.parent()) {
                    if (p.is("class_definition")) base_node = p;
                }
                if (base != c.cls && base_node) {
                    if (const auto name = overridden_across_files(ctx_, c.file, c.cls, *forward, base_node, base);
                        !name.empty()) {
                        fail(e, fmt::format("`{}` inherits its forward from `{}` in another file and changes what "
                                            "`self.{}` is there",
                                            c.cls, base, name));
                        return std::nullopt;
                    }
                }
            }
            return function(e, forward->file, forward->node, row_args, true,
                            forward->file == c.file ? c.cls : std::string());
        }
        case Callable::Method:
            return function(e, c.file, c.function, row_args, true);
        case Callable::Function:
            return function(e, c.file, c.function, row_args, false);
        default:
            fail(e, fmt::format("`{}` could not be resolved to code graphmend can read", e.field("function").text()));
            return std::nullopt;
    }
}

std::optional<bool> RowFlow::function(const Node& call, std::size_t file, const Node& fn,
                                      const std::vector<bool>& row_args, bool method, const std::string& owner) {
    if (depth_ >= 4) {
        fail(call, "the computation on the rows goes more than 4 calls deep");
        return std::nullopt;
    }
    std::vector<Node> params;
    for (const Node& p : fn.field("parameters").named_children()) params.push_back(p);
    if (method && !params.empty()) params.erase(params.begin());
    const auto call_args = call.field("arguments").named_children();
    RowFlow inner(ctx_, file, fn, !method ? std::string() : owner.empty() ? owner_of(fn) : owner, depth_ + 1);
    for (std::size_t i = 0; i < call_args.size(); ++i) {
        if (!row_args[i]) continue;
        std::string name;
        if (call_args[i].is("keyword_argument")) {
            name = text(call_args[i].field("name"));
            const bool named = std::any_of(params.begin(), params.end(), [&](const Node& p) {
                const Node n = p.is("identifier") ? p : p.field("name") ? p.field("name")
                                                      : p.named_children().empty() ? Node() : p.named_children()[0];
                return n && n.is("identifier") && n.text() == name;
            });
            if (!named) {  // it would land in **kwargs, where the rows are not followed
                fail(call, fmt::format("rows passed as `{}=`, which no parameter names", name));
                return std::nullopt;
            }
        } else if (i < params.size() && (params[i].is("identifier") || params[i].is("typed_parameter"))) {
            name = params[i].is("identifier") ? text(params[i]) : text(params[i].named_children()[0]);
        } else {
            fail(call, "rows passed to a parameter graphmend cannot match");
            return std::nullopt;
        }
        inner.rows.insert(name);
    }
    const auto out = inner.block(fn.field("body"));
    needs_eval = needs_eval || inner.needs_eval;
    if (!out) {
        fail(call, fmt::format("in `{}`: {}", fn.field("name").text(), inner.why()));
        return std::nullopt;
    }
    return *out;
}

std::optional<bool> RowFlow::block(const Node& body) {
    bool returns_rows = false;
    for (const Node& s : body.named_children()) {
        if (s.is("comment") || s.is("pass_statement")) continue;
        if (s.is("expression_statement")) {
            const auto parts = s.named_children();
            if (parts.size() == 1 && parts[0].is("string")) continue;  // a docstring
            if (parts.size() == 1 && (parts[0].is("assignment") || parts[0].is("augmented_assignment"))) {
                if (!assignment(parts[0])) return std::nullopt;
                continue;
            }
            fail(s, "a statement that is not an assignment");
            return std::nullopt;
        }
        if (s.is("return_statement")) {
            const auto parts = s.named_children();
            if (parts.empty()) continue;
            const auto r = expr(parts[0]);
            if (!r) return std::nullopt;
            returns_rows = returns_rows || *r;
            continue;
        }
        if (s.is("if_statement") && !reads_row_values(s.field("condition"))) {
            // Each branch starts from the rows before the `if`; after it, a local holds rows
            // when any branch left rows in it.
            const std::set<std::string> before = rows;
            std::set<std::string> after = rows;
            for (const Node& part : s.named_children()) {
                Node b = part.is("block") ? part : part.field("consequence") ? part.field("consequence") : part.field("body");
                if (part == s.field("condition")) continue;
                if (!b || !b.is("block")) continue;
                rows = before;
                const auto r = block(b);
                if (!r) return std::nullopt;
                returns_rows = returns_rows || *r;
                after.insert(rows.begin(), rows.end());
            }
            rows = after;
            continue;
        }
        fail(s, fmt::format("{} in the computation on the rows", construct_name(s)));
        return std::nullopt;
    }
    return returns_rows;
}

// `A, B = X.chunk(N, dim=D)` with X rows, N the number of names and D a dimension after the
// rows' (D >= 1, or -1 on the output of a matrix product, which has two dimensions at least):
// each part holds the rows' own columns (Mixtral's `gate, up = F.linear(x, w).chunk(2, dim=-1)`).
bool RowFlow::chunk_of_rows(const Node& a) {
    const Node left = a.field("left");
    const Node call = syntax::without_parens(a.field("right"));
    if (!call.is("call") || !call.field("function").is("attribute") ||
        call.field("function").field("attribute").text() != "chunk") {
        return false;
    }
    const auto args = call.field("arguments").named_children();
    if (args.size() != 2 || !args[0].is("integer")) return false;
    const Node dim = args[1].is("keyword_argument") ? args[1].field("value") : args[1];
    if (args[1].is("keyword_argument") && args[1].field("name").text() != "dim") return false;
    std::vector<std::string> names;
    for (const Node& t : left.named_children()) {
        if (!t.is("identifier")) return false;
        names.push_back(text(t));
    }
    if (std::to_string(names.size()) != args[0].text()) return false;
    const Node recv = syntax::without_parens(call.field("function").field("object"));
    const auto r = expr(recv);
    if (!r || !*r) return false;
    bool product = false;
    if (recv.is("call")) {
        const std::string name = ctx_.project.external_name(file_, recv.field("function"));  // outlives `leaf`
        const std::string_view leaf = last_part(name);
        product = leaf == "linear" || leaf == "matmul" ||
                  (recv.field("function").is("attribute") && recv.field("function").field("attribute").text() == "matmul");
    }
    const bool after_rows = (dim.is("integer") && dim.text() != "0") || (dim.text() == "-1" && product);
    if (!after_rows) return false;
    rows.insert(names.begin(), names.end());
    return true;
}

bool RowFlow::assignment(const Node& a) {
    if (strict) return strict_assignment(a);  // row_layout.cpp
    const Node left = a.field("left");
    if (a.is("assignment") && (left.is("pattern_list") || left.is("tuple_pattern")) && holds_rows(a.field("right"))) {
        if (chunk_of_rows(a)) return true;
        const Node r = syntax::without_parens(a.field("right"));
        if (why_.empty() && r.is("call") && r.field("function").is("attribute") &&
            r.field("function").field("attribute").text() == "chunk") {
            return fail(a, "a `.chunk()` of the rows not shown to split their columns (dim >= 1, or -1 on the output "
                           "of a matrix product, into as many names as parts)");
        }
    }
    if (!left.is("identifier")) {
        if (holds_rows(a)) return fail(a, "rows stored outside a local");
        // In a function the rows are passed to: state it stores would be stored for experts or
        // rows the original did not run it for.
        if (depth_ > 0) return fail(a, fmt::format("`{}` stores state in the computation on the rows", left.text()));
        return true;
    }
    const auto r = expr(a.field("right"));
    if (!r) return false;
    const std::string name = text(left);
    if (a.is("augmented_assignment")) {
        if (*r) rows.insert(name);
        return true;
    }
    if (*r) {
        rows.insert(name);
    } else {
        rows.erase(name);
    }
    return true;
}

}  // namespace graphmend::rules

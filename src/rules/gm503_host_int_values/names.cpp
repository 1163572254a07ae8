// Syntax and bindings for the host-int matcher: what a function binds, its parameters, the
// argument a call passes for one, and ints computed from shapes (see host_ints_internal.hpp).
#include "host_ints_internal.hpp"

namespace graphmend::rules::host_ints {

// The outermost parentheses around `n` (`n` itself when there are none).
Node outer(Node n) {
    while (n.parent().is("parenthesized_expression")) n = n.parent();
    return n;
}

bool within(const Node& inner, const Node& outer_node) {
    return outer_node && outer_node.begin() <= inner.begin() && inner.end() <= outer_node.end();
}

bool is_scope(const Node& n) {
    return n.is("function_definition") || n.is("class_definition") || n.is("lambda");
}

bool is_comprehension(const Node& n) {
    return n.is("list_comprehension") || n.is("generator_expression") || n.is("set_comprehension") ||
           n.is("dictionary_comprehension");
}

// The identifiers a target pattern binds.
std::vector<Node> target_names(const Node& target) {
    std::vector<Node> out;
    syntax::walk(target, [&](const Node& t) {
        if (t.is("identifier")) out.push_back(t);
        return !t.is("attribute") && !t.is("subscript");
    });
    return out;
}

// The statements (or expressions) of `def`'s own scope that bind `name`, comprehensions
// excluded (they have a scope of their own).
std::vector<Node> bindings(const Node& def, std::string_view name) {
    std::vector<Node> out;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (is_scope(n)) {
            if (!n.is("lambda") && n.field("name").text() == name) out.push_back(n);
            return false;
        }
        if (is_comprehension(n)) return false;
        Node target;
        if (n.is("assignment") || n.is("augmented_assignment") || n.is("for_statement")) target = n.field("left");
        if (n.is("named_expression")) target = n.field("name");
        if (n.is("as_pattern_target") || n.is("delete_statement") || n.is("global_statement") ||
            n.is("nonlocal_statement") || n.is("import_statement") || n.is("import_from_statement")) {
            target = n;
        }
        if (target) {
            for (const Node& t : target_names(target)) {
                if (t.text() == name) {
                    out.push_back(n);
                    break;
                }
            }
        }
        return true;
    });
    return out;
}

// The parameters of `def` in order (`*args` and what follows are keyword-only).
std::vector<Param> params_of(const Node& def) {
    std::vector<Param> out;
    bool positional = true;
    for (const Node& p : def.field("parameters").named_children()) {
        if (p.is("list_splat_pattern") || p.is("keyword_separator") || p.is("dictionary_splat_pattern")) {
            positional = false;
            continue;
        }
        Node n = p.is("identifier") ? p : p.field("name");
        if (!n && p.is("typed_parameter") && !p.named_children().empty()) n = p.named_children()[0];
        if (n && n.is("identifier")) out.push_back({text(n), positional});
    }
    return out;
}

bool is_param(const Node& def, std::string_view name) {
    for (const auto& p : params_of(def)) {
        if (p.name == name) return true;
    }
    return false;
}

// True when `def` is a method called with its receiver bound (not a staticmethod).
bool bound_method(const Node& def) {
    Node p = def.parent();
    bool is_static = false;
    if (p.is("decorated_definition")) {
        for (const Node& d : p.named_children()) {
            if (d.is("decorator") && d.text() == "@staticmethod") is_static = true;
        }
        p = p.parent();
    }
    return p.is("block") && p.parent().is("class_definition") && !is_static;
}

// The argument `call` passes for parameter `param` of `def`; invalid when it passes none.
// `ok` is false when the arguments cannot be matched to the parameters (`*a`, `**k`).
Node argument_for(const Node& call, const Node& def, std::string_view param, bool& ok) {
    ok = true;
    auto params = params_of(def);
    std::size_t pos = 0;
    if (bound_method(def)) {
        const Node fn = call.field("function");
        // `Class.method(obj, ...)` passes the receiver as an argument: not matched here.
        if (fn.is("attribute") && fn.field("attribute").text() == def.field("name").text()) {
            const std::string object = text(fn.field("object"));
            if (object != "self" && object != "cls" && object != "super()") {
                ok = false;
                return {};
            }
        }
        pos = 1;
    }
    for (const Node& a : call.field("arguments").named_children()) {
        if (a.is("comment")) continue;
        if (a.is("list_splat") || a.is("dictionary_splat")) {
            ok = false;
            return {};
        }
        if (a.is("keyword_argument")) {
            if (a.field("name").text() == param) return a.field("value");
            continue;
        }
        if (pos < params.size() && params[pos].positional) {
            if (params[pos].name == param) return a;
            ++pos;
        }
    }
    return {};
}

// The parameter of `def` that the argument `arg` (a keyword_argument, or a positional argument
// of the argument_list `args`) binds; "" when none does by name or position.
std::string parameter_taking(const Node& def, const Node& args, const Node& arg) {
    if (arg.is("keyword_argument")) return text(arg.field("name"));
    const auto ps = params_of(def);
    std::size_t pos = bound_method(def) ? 1 : 0;
    for (const Node& a : args.named_children()) {
        if (a.is("comment")) continue;
        if (a.is("keyword_argument") || a.is("list_splat") || a.is("dictionary_splat")) break;
        if (a == arg) return pos < ps.size() && ps[pos].positional ? ps[pos].name : "";
        ++pos;
    }
    return "";
}

// --- ints computed from shapes ---------------------------------------------------------------

namespace {

// True when every binding of `name` in def gives it an int from a shape.
bool int_name(const Node& def, std::string_view name, int depth) {
    const auto bs = bindings(def, name);
    if (bs.empty() || depth > 6) return false;
    for (const Node& b : bs) {
        if (!b.is("assignment")) return false;
        const Node left = b.field("left");
        const Node right = syntax::without_parens(b.field("right"));
        if (!right) return false;
        if (left.is("identifier")) {
            if (!int_expr(def, right, depth + 1)) return false;
            continue;
        }
        // `b, c, h, w = x.shape` / `x.size()`
        if (!(left.is("pattern_list") || left.is("tuple_pattern"))) return false;
        for (const Node& t : left.named_children()) {
            if (!t.is("identifier")) return false;
        }
        const bool shape = (right.is("attribute") && right.field("attribute").text() == "shape") ||
                           (right.is("call") && right.field("function").is("attribute") &&
                            right.field("function").field("attribute").text() == "size" &&
                            right.field("arguments").named_children().empty());
        if (!shape) return false;
    }
    return true;
}

}  // namespace

bool int_expr(const Node& def, Node e, int depth) {
    e = syntax::without_parens(e);
    if (e.is("integer")) return true;
    if (e.is("identifier")) return int_name(def, e.text(), depth);
    if (e.is("binary_operator")) {
        const auto op = e.field("operator").text();
        return (op == "+" || op == "-" || op == "*" || op == "//") && int_expr(def, e.field("left"), depth + 1) &&
               int_expr(def, e.field("right"), depth + 1);
    }
    if (e.is("subscript")) {  // x.shape[k]
        const Node v = e.field("value");
        const auto idx = e.named_children();
        return v.is("attribute") && v.field("attribute").text() == "shape" && idx.size() == 2 &&
               idx[1].is("integer");
    }
    if (e.is("call")) {
        const Node fn = e.field("function");
        const auto args = e.field("arguments").named_children();
        if (fn.is("identifier") && fn.text() == "len" && args.size() == 1) return true;
        if (fn.is("attribute") && fn.field("attribute").text() == "size" && args.size() == 1 && args[0].is("integer")) {
            return true;
        }
        if (fn.is("attribute") && (fn.field("attribute").text() == "dim" || fn.field("attribute").text() == "numel" ||
                                   fn.field("attribute").text() == "ndimension") &&
            args.empty()) {
            return true;
        }
    }
    return false;
}

}  // namespace graphmend::rules::host_ints

// Whether what a read uses stays as it was made, for the host-int matcher (see
// host_ints_internal.hpp): the tensor read back, the list it was made from, and the elements a
// loop over the tensor binds, followed into the project functions they are passed to.
#include <fmt/format.h>

#include "graphmend/knowledge.hpp"
#include "host_ints_internal.hpp"

namespace graphmend::rules::host_ints {

// Why the elements of `name` a loop or comprehension binds may be changed (views of it).
std::string Matcher::element_changes(std::size_t f, const Node& loop, const std::string& name) const {
    std::set<std::string> names;
    for (const Node& t : target_names(loop.field("left"))) names.insert(text(t));
    Node region = loop.is("for_in_clause") ? loop.parent() : loop.field("body");
    std::string why;
    syntax::walk(region, [&](const Node& n) {
        if (!why.empty() || is_scope(n)) return false;
        if (!n.is("identifier") || !names.contains(text(n)) || !is_read(n)) return true;
        const Node o = outer(n);
        const Node p = o.parent();
        if (p.is("augmented_assignment") && p.field("left") == o) {
            why = fmt::format("line {} changes an element of `{}` in place", line_of(p), name);
        } else if (p.is("attribute") && p.field("object") == o) {
            const auto attr = p.field("attribute").text();
            if (attr.ends_with("_") || knowledge::shares_storage(attr, "int64") ||
                knowledge::view_attribute(attr)) {
                why = fmt::format("`{}` at line {} may change an element of `{}`", p.text(), line_of(p), name);
            }
        } else if (p.is("subscript") && p.field("value") == o) {
            why = fmt::format("`{}` at line {} is a view of an element of `{}`", p.text(), line_of(p), name);
        } else if (p.is("assignment") || p.is("return_statement") || p.is("list") || p.is("tuple") ||
                   p.is("expression_list")) {
            why = fmt::format("an element of `{}` is kept at line {}", name, line_of(p));
        } else if (p.is("argument_list") || p.is("keyword_argument")) {
            const Node call = p.is("argument_list") ? p.parent() : p.parent().parent();
            const Node fn = call.field("function");
            const bool tensor_method =
                fn.is("attribute") && !fn.field("attribute").text().ends_with("_") &&
                (knowledge::size_method(fn.field("attribute").text()) ||
                 ctx.values.eval(f, fn.field("object")).only(analysis::kTensor));
            if (!torch_call(f, call) && !tensor_method) {
                why = fmt::format("an element of `{}` is passed to `{}` at line {}", name, fn.text(),
                                  line_of(call));
            }
        }
        return why.empty();
    });
    return why;
}

// Why the tensor `name`, a local or parameter of `def`, may be changed in `def` or a project
// function it is passed to ("" when it is only read). `skip` holds reads fixed here.
std::string Matcher::tensor_changes(std::size_t f, const Node& def, const std::string& name, int depth) {
    if (depth > 8) return fmt::format("`{}` is passed through too many calls to follow", name);
    if (!visiting.insert({f, def.begin(), "t:" + name}).second) return "";
    std::string why;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (!why.empty() || is_scope(n)) return false;
        if (!n.is("identifier") || n.text() != name || !is_read(n)) return true;
        // Climb through views: subscripts and view methods keep the storage.
        Node t = n;
        for (;;) {
            const Node o = outer(t);
            const Node p = o.parent();
            if (p.is("subscript") && p.field("value") == o) {
                t = p;
                continue;
            }
            if (p.is("attribute") && p.field("object") == o) {
                const auto attr = p.field("attribute").text();
                if (knowledge::view_attribute(attr)) {
                    t = p;
                    continue;
                }
                const Node call = outer(p).parent();
                if (call.is("call") && call.field("function") == p) {
                    if (knowledge::shares_storage(attr, "int64")) {  // the tensor is int64
                        t = call;
                        continue;
                    }
                    if (attr.ends_with("_") || attr.starts_with("__")) {
                        why = fmt::format("`{}` at line {} may change `{}` in place", p.text(), line_of(p), name);
                        return false;
                    }
                    return true;  // a method making a new value
                }
                if (p.parent().is("assignment") && p.parent().field("left") == p) {
                    why = fmt::format("line {} sets an attribute of `{}`", line_of(p), name);
                    return false;
                }
                return true;  // .shape, .device, .dtype ...
            }
            break;
        }
        const Node o = outer(t);
        const Node p = o.parent();
        if (p.is("binary_operator") || p.is("comparison_operator") || p.is("unary_operator") ||
            p.is("boolean_operator") || p.is("not_operator")) {
            return true;
        }
        if ((p.is("assignment") || p.is("augmented_assignment")) && p.field("left") == o) {
            why = fmt::format("line {} writes into `{}`", line_of(p), name);
            return false;
        }
        if (p.is("augmented_assignment")) {  // `x += T` makes new values unless x is T's
            return true;
        }
        // An argument: of a torch function, a builtin that only reads, a project function.
        Node arg = o;
        Node argp = p;
        if (argp.is("keyword_argument")) {
            arg = argp;
            argp = argp.parent();
        }
        if ((argp.is("list") || argp.is("tuple")) && outer(argp).parent().is("argument_list")) {
            // `torch.stack([T[..., 1], T[..., 0]])`, `torch.cat((T.new_zeros(1), ...))`
            const Node call = outer(argp).parent().parent();
            if (torch_call(f, call)) return true;
            why = fmt::format("`{}` is passed in a list at line {} to code that may change it", name, line_of(p));
            return false;
        }
        if (argp.is("argument_list")) {
            const Node call = argp.parent();
            const Node fn = call.field("function");
            if (torch_call(f, call)) return true;
            if (fn.is("identifier") && (fn.text() == "len" || fn.text() == "isinstance") && t == n) return true;
            if (fn.is("identifier") && (fn.text() == "enumerate" || fn.text() == "zip") && t == n) {
                const Node loop = outer(call).parent();
                if ((loop.is("for_statement") || loop.is("for_in_clause")) && loop.field("right") == outer(call)) {
                    why = element_changes(f, loop, name);
                    return why.empty();
                }
            }
            if (auto ref = project_callee(f, call)) {
                if (!(t == n)) {
                    why = fmt::format("a view of `{}` is passed to `{}` at line {}", name, fn.text(), line_of(call));
                    return false;
                }
                const std::string param = parameter_taking(ref->node, argp, arg);
                if (param.empty()) {
                    why = fmt::format("`{}` is passed to `{}` at line {} where no parameter takes it by name",
                                      name, fn.text(), line_of(call));
                    return false;
                }
                why = tensor_changes(ref->file, ref->node, param, depth + 1);
                return why.empty();
            }
            why = fmt::format("`{}` is passed to `{}` at line {}, which graphmend cannot read", name, fn.text(),
                              line_of(call));
            return false;
        }
        // Iterated: its elements are views of it, which must not be changed.
        if ((p.is("for_statement") || p.is("for_in_clause")) && p.field("right") == o && t == n) {
            why = element_changes(f, p, name);
            return why.empty();
        }
        why = fmt::format("`{}` at line {} may be kept or changed where graphmend cannot follow it", t.text(),
                          line_of(t));
        return false;
    });
    return why;
}

// Why the list `name` may be changed in `def` (after byte `made`, where the tensor is made;
// 0: anywhere) or in a project function it is passed to ("" when it is only read).
std::string Matcher::list_changes(std::size_t f, const Node& def, const std::string& name, std::uint32_t made, int depth) {
    if (depth > 8) return fmt::format("`{}` is passed through too many calls to follow", name);
    if (!visiting.insert({f, def.begin(), "l:" + name}).second) return "";
    std::string why;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (!why.empty() || is_scope(n)) return false;
        if (!n.is("identifier") || n.text() != name || !is_read(n)) return true;
        const Node o = outer(n);
        const Node p = o.parent();
        if (p.is("attribute") && p.field("object") == o) {
            const auto attr = p.field("attribute").text();
            if (knowledge::list_read(attr)) return true;
            if (attr == "append" && n.end() < made) return true;  // filled before the tensor is made
            why = fmt::format("`{}` at line {} changes the list{}", p.text(), line_of(p),
                              made ? " after the tensor was made from it" : "");
            return false;
        }
        if (p.is("subscript") && p.field("value") == o) {
            const Node sp = outer(p).parent();
            if ((sp.is("assignment") || sp.is("augmented_assignment")) && sp.field("left") == outer(p)) {
                why = fmt::format("line {} writes into `{}`", line_of(sp), name);
                return false;
            }
            if (sp.is("delete_statement")) {
                why = fmt::format("line {} deletes from `{}`", line_of(sp), name);
                return false;
            }
            return true;
        }
        if ((p.is("for_statement") || p.is("for_in_clause")) && p.field("right") == o) return true;
        if (p.is("binary_operator") || p.is("comparison_operator")) return true;
        Node arg = o;
        Node argp = p;
        if (argp.is("keyword_argument")) {
            arg = argp;
            argp = argp.parent();
        }
        if (argp.is("argument_list")) {
            const Node call = argp.parent();
            const Node fn = call.field("function");
            if (fn.is("identifier") && (fn.text() == "len" || fn.text() == "enumerate" || fn.text() == "zip" ||
                                        fn.text() == "tuple" || fn.text() == "list" || fn.text() == "sum" ||
                                        fn.text() == "min" || fn.text() == "max" || fn.text() == "sorted")) {
                return true;
            }
            if (torch_call(f, call)) return true;
            if (auto ref = project_callee(f, call)) {
                const std::string param = parameter_taking(ref->node, argp, arg);
                if (param.empty()) {
                    why = fmt::format("`{}` is passed to `{}` at line {} where no parameter takes it by name",
                                      name, fn.text(), line_of(call));
                    return false;
                }
                why = list_changes(ref->file, ref->node, param, 0, depth + 1);
                return why.empty();
            }
            why = fmt::format("`{}` is passed to `{}` at line {}, which graphmend cannot read", name, fn.text(),
                              line_of(call));
            return false;
        }
        why = fmt::format("`{}` at line {} may be kept or changed where graphmend cannot follow it", name,
                          line_of(n));
        return false;
    });
    return why;
}

}  // namespace graphmend::rules::host_ints

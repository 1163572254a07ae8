// Where a tensor read back comes from, for the host-int matcher (see host_ints_internal.hpp):
// a local made by `torch.as_tensor(L, ...)` from a list of ints, or a parameter that every call
// in the project passes such a tensor.
#include <fmt/format.h>

#include "host_ints_internal.hpp"

namespace graphmend::rules::host_ints {

// The list local `L` a host tensor is made from, in `def`: its elements' rank and width.
Origin Matcher::list_origin(std::size_t f, const Node& def, const std::string& list, std::uint32_t made) {
    Origin o;
    o.found = true;
    o.list = list;
    const auto bs = bindings(def, list);
    if (bs.size() != 1 || !bs[0].is("assignment") || !bs[0].field("left").is("identifier") ||
        !syntax::without_parens(bs[0].field("right")).is("list") ||
        !syntax::without_parens(bs[0].field("right")).named_children().empty() || bs[0].begin() > made) {
        o.refused = fmt::format("`{}` is not a list assigned once from `[]` before the tensor is made", list);
        return o;
    }
    o.list_node = bs[0].field("left");
    // Its elements: `L.append(E)`.
    std::vector<Node> elements;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (is_scope(n)) return false;
        if (n.is("call") && n.field("function").is("attribute") &&
            n.field("function").field("object").text() == list &&
            n.field("function").field("attribute").text() == "append") {
            const auto args = n.field("arguments").named_children();
            if (args.size() == 1 && n.end() < made) elements.push_back(args[0]);
        }
        return true;
    });
    if (elements.empty()) {
        o.refused = fmt::format("nothing shows what `{}` holds", list);
        return o;
    }
    for (Node e : elements) {
        e = syntax::without_parens(e);
        if (e.is("identifier")) {  // `spatial_shape = (height, width)`
            const auto eb = bindings(def, e.text());
            if (eb.size() == 1 && eb[0].is("assignment") && eb[0].field("left").is("identifier")) {
                e = syntax::without_parens(eb[0].field("right"));
            }
        }
        int rank = 1;
        std::size_t width = 0;
        if (e.is("tuple")) {
            rank = 2;
            for (const Node& item : e.named_children()) {
                if (item.is("comment")) continue;
                ++width;
                if (!int_expr(def, item)) {
                    o.refused = fmt::format("`{}` in `{}` at line {} is not shown to be an int computed from "
                                            "shapes",
                                            item.text(), list, line_of(item));
                    return o;
                }
            }
        } else if (!int_expr(def, e)) {
            o.refused = fmt::format("`{}` appended to `{}` at line {} is not shown to be an int (or a tuple "
                                    "of ints) computed from shapes",
                                    e.text(), list, line_of(e));
            return o;
        }
        if (o.rank != 0 && (o.rank != rank || o.width != width)) {
            o.refused = fmt::format("`{}` holds elements of different forms", list);
            return o;
        }
        o.rank = rank;
        o.width = width;
    }
    visiting.clear();
    if (std::string why = list_changes(f, def, list, made, 0); !why.empty()) o.refused = why;
    return o;
}


// followed.
Origin Matcher::origin(std::size_t f, const Node& def, const std::string& name, int depth) {
    Origin o;
    if (depth > 4) return o;
    const auto bs = bindings(def, name);
    if (is_param(def, name)) {
        if (!bs.empty()) return o;  // rebound: not a host tensor for sure
        return param_origin(f, def, name, depth);
    }
    if (bs.size() != 1 || !bs[0].is("assignment") || !bs[0].field("left").is("identifier")) return o;
    const Node right = syntax::without_parens(bs[0].field("right"));
    if (!right.is("call")) return o;
    const std::string fn = ctx.project.external_name(f, right.field("function"));
    if (fn != "torch.as_tensor" && fn != "torch.tensor") return o;
    const auto args = right.field("arguments").named_children();
    if (args.empty() || !args[0].is("identifier")) return o;
    for (const Node& a : args) {
        if (a.is("keyword_argument") && a.field("name").text() == "dtype") {
            const std::string dt = ctx.project.external_name(f, a.field("value"));
            if (dt != "torch.long" && dt != "torch.int64") {
                o.found = true;
                o.refused = fmt::format("the tensor is made with dtype `{}`, which may change the ints' values",
                                        a.field("value").text());
                return o;
            }
        } else if (!(a == args[0]) && !a.is("comment")) {
            if (!a.is("keyword_argument") || a.field("name").text() != "device") {
                o.found = true;
                o.refused = fmt::format("`{}` is made with arguments other than dtype and device", name);
                return o;
            }
        }
    }
    o = list_origin(f, def, text(args[0]), bs[0].begin());
    if (o.refused.empty()) {
        visiting.clear();
        if (std::string why = tensor_changes(f, def, name, 0); !why.empty()) o.refused = why;
    }
    return o;
}


// every call passes the matching list in, if any.
Origin Matcher::param_origin(std::size_t f, const Node& def, const std::string& name, int depth) {
    Origin o;
    std::string why;
    const auto sites = call_sites(f, def, why);
    if (sites.empty() && why.empty()) return o;  // from outside the project: not known
    o.found = true;
    if (!why.empty()) {
        o.refused = why;
        return o;
    }
    std::vector<std::string> siblings;
    for (const auto& p : params_of(def)) {
        if (p.name != name && p.name != "self" && p.name != "cls") siblings.push_back(p.name);
    }
    // Calls that pass no tensor (a list already) read nothing back; if none passes one, there
    // is no read of a tensor here.
    std::size_t tensors = 0;
    for (const auto& site : sites) {
        bool ok = true;
        const Node arg = argument_for(site.call, def, name, ok);
        if (!ok || !arg || ctx.values.eval(site.file, arg).tensor()) ++tensors;
    }
    if (tensors == 0) {
        o.found = false;
        return o;
    }
    for (const auto& site : sites) {
        bool ok = true;
        const Node arg = argument_for(site.call, def, name, ok);
        const std::string where = fmt::format("{}:{}", file_name(site.file), line_of(site.call));
        if (!ok || !arg || !syntax::without_parens(arg).is("identifier")) {
            o.refused = fmt::format("the call at {} passes `{}` something graphmend cannot follow", where, name);
            return o;
        }
        Node caller = analysis::enclosing_function(site.call);
        while (caller && !caller.is("function_definition")) caller = analysis::enclosing_function(caller);
        if (!caller) {
            o.refused = fmt::format("the call at {} is outside a function", where);
            return o;
        }
        const Origin c = origin(site.file, caller, text(syntax::without_parens(arg)), depth + 1);
        if (!c.found) {
            o.refused = fmt::format("the call at {} passes `{}` a tensor not shown to be built from ints", where,
                                    arg.text());
            return o;
        }
        if (!c.refused.empty()) {
            o.refused = fmt::format("at the call at {}: {}", where, c.refused);
            return o;
        }
        if (o.rank != 0 && (o.rank != c.rank || o.width != c.width)) {
            o.refused = fmt::format("the calls pass lists of different forms in `{}`", name);
            return o;
        }
        o.rank = c.rank;
        o.width = c.width;
        std::vector<std::string> kept;
        for (const auto& s : siblings) {
            bool sok = true;
            const Node sarg = argument_for(site.call, def, s, sok);
            if (sok && sarg && !c.list.empty() && syntax::without_parens(sarg).text() == c.list) kept.push_back(s);
        }
        siblings = std::move(kept);
    }
    if (!siblings.empty()) {
        // Prefer the sibling named after the tensor (`spatial_shapes_list`).
        std::string best = siblings[0];
        for (const auto& s : siblings) {
            if (s.starts_with(name)) best = s;
        }
        if (!bindings(def, best).empty()) {
            o.refused = fmt::format("`{}` is assigned in the function", best);
            return o;
        }
        o.list = best;
    }
    return o;
}

}  // namespace graphmend::rules::host_ints

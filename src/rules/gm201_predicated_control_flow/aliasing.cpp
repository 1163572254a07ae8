// GM201: when a select would hand out a new tensor where the `if` handed out an existing one,
// and the code can tell the difference (see predicated_control_flow.hpp, alias_refusal).
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/knowledge.hpp"
#include "predicated_control_flow.hpp"

namespace graphmend::rules::control_flow {

bool may_alias(const Node& value) {
    const Node e = syntax::without_parens(value);
    if (!e) return false;
    if (e.is("identifier") || e.is("attribute") || e.is("subscript")) return true;
    if (e.is("conditional_expression") || e.is("boolean_operator")) {
        for (const Node& part : e.named_children()) {
            if (may_alias(part)) return true;
        }
        return false;
    }
    if (e.is("call")) {
        const Node fn = e.field("function");
        if (!fn.is("attribute")) return true;  // a function or a module of the project: not known
        const std::string_view method = fn.field("attribute").text();
        if (knowledge::may_alias(method)) return true;  // a view, or a conversion to what it is
        const Node obj = syntax::without_parens(fn.field("object"));
        // `self.layer(x)`: a submodule may return its input (nn.Identity, dropout in eval).
        if (obj.is("identifier") && obj.text() == "self") return true;
        return false;
    }
    return false;  // operators, literals, comprehensions, lambdas: a new object
}

namespace {

// How the call or assignment `n` changes or keeps a tensor one of `names` holds, or "".
std::string mutation(const Node& n, const std::set<std::string>& names) {
    std::string found;
    auto is_name = [&](const Node& x) {
        const Node e = syntax::without_parens(x);
        return e.is("identifier") && names.contains(std::string(e.text()));
    };
    if (n.is("call")) {
        const Node fn = n.field("function");
        if (fn.is("attribute") && is_name(fn.field("object"))) {
            const std::string_view m = fn.field("attribute").text();
            if (knowledge::in_place(m)) found = fmt::format("`{}` changes it in place", n.text());
        }
        for (const Node& a : n.field("arguments").named_children()) {
            if (a.is("keyword_argument") && a.field("name").text() == "out" && is_name(a.field("value"))) {
                found = fmt::format("`{}` writes into it", n.text());
            }
        }
        // Kept by the module: `self.register_buffer("NAME", X)`, `setattr(obj, "NAME", X)`.
        if (found.empty() && (fn.text().ends_with("register_buffer") || fn.text() == "setattr")) {
            for (const Node& a : n.field("arguments").named_children()) {
                if (is_name(a)) found = fmt::format("`{}` keeps it in the module", n.text());
            }
        }
    } else if (n.is("assignment") || n.is("augmented_assignment")) {
        const Node left = n.field("left");
        if ((left.is("subscript") || left.is("attribute")) && is_name(left.is("subscript") ? left.field("value") : left.field("object"))) {
            found = fmt::format("`{}` writes into it", syntax::without_parens(left).text());
        } else if (n.is("augmented_assignment") && is_name(left)) {
            found = fmt::format("`{}` updates a tensor in place", n.text());
        } else if ((left.is("attribute") || left.is("subscript")) && is_name(n.field("right"))) {
            found = fmt::format("`{}` keeps it", n.text());
        }
    }
    return found;
}

// The calls and assignments of a function's body, outside nested functions and classes, in
// walk order (pre-order): offsets from the function's first byte, and every identifier
// mutation() could find among `names` (it finds nothing for the others).
struct Candidate {
    std::uint32_t begin = 0, end = 0;
    std::set<std::string> names;
};

std::vector<Candidate> candidates_of(const Node& def) {
    std::vector<Candidate> out;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition")) return false;
        if (!n.is("call") && !n.is("assignment") && !n.is("augmented_assignment")) return true;
        Candidate c{n.begin() - def.begin(), n.end() - def.begin(), {}};
        const auto add = [&](const Node& x) {
            if (const Node e = syntax::without_parens(x); e.is("identifier")) c.names.insert(std::string(e.text()));
        };
        if (n.is("call")) {
            const Node fn = n.field("function");
            if (fn.is("attribute")) {
                const std::string_view m = fn.field("attribute").text();
                if (knowledge::in_place(m)) add(fn.field("object"));
            }
            const bool keeps = fn.text().ends_with("register_buffer") || fn.text() == "setattr";
            for (const Node& a : n.field("arguments").named_children()) {
                if (keeps) add(a);
                if (a.is("keyword_argument") && a.field("name").text() == "out") add(a.field("value"));
            }
        } else {
            const Node left = n.field("left");
            if (n.is("augmented_assignment")) add(left);
            if (left.is("subscript")) add(left.field("value"));
            if (left.is("attribute")) add(left.field("object"));
            if (left.is("subscript") || left.is("attribute")) {
                if (const Node right = n.field("right")) add(right);
            }
        }
        if (!c.names.empty()) out.push_back(std::move(c));
        return true;
    });
    return out;
}

}  // namespace

std::string mutated_elsewhere(const Node& def, const Node& site, const std::set<std::string>& names) {
    // Code that runs after the select: below it, or anywhere in a loop around it.
    Node loop;
    for (Node p = site.parent(); p && !(p == def); p = p.parent()) {
        if (p.is("for_statement") || p.is("while_statement")) loop = p;
    }
    auto runs_after = [&](std::uint32_t begin, std::uint32_t end) {
        return begin >= site.end() || (loop && loop.begin() <= begin && end <= loop.end());
    };
    // The function's candidates are remembered (analysis::FunctionMemo): a function with many
    // sites is walked once, not once per site.
    thread_local analysis::FunctionMemo<std::vector<Candidate>> memo;
    std::string found;
    for (const Candidate& c : memo.get(def, candidates_of)) {
        const std::uint32_t begin = def.begin() + c.begin;
        const std::uint32_t end = def.begin() + c.end;
        if (site.begin() <= begin && end <= site.end()) continue;  // inside the site
        if (!runs_after(begin, end)) continue;
        if (std::none_of(c.names.begin(), c.names.end(), [&](const std::string& n) { return names.contains(n); })) {
            continue;
        }
        Node n = def.descendant(begin, end);
        while (n && !(n.begin() == begin && n.end() == end && (n.is("call") || n.is("assignment") ||
                                                               n.is("augmented_assignment")))) {
            n = n.parent();
        }
        if (!n) continue;
        found = mutation(n, names);
        if (!found.empty()) break;
    }
    if (found.size() > 90) found = found.substr(0, 87) + "...`";
    return found;
}

std::string alias_refusal(const Node& def, const Node& site, const std::vector<Node>& values, bool keeps_old,
                          const std::set<std::string>& names, const Node& store) {
    bool aliases = keeps_old;
    for (const Node& v : values) aliases = aliases || may_alias(v);
    if (!aliases) return "";
    if (store) {
        return fmt::format("the value is stored in `{}`: the original stores the branch's own tensor there (an "
                           "existing tensor or a view of one), a select a new tensor, so identity and aliasing "
                           "would differ",
                           store.text());
    }
    if (names.empty()) return "";
    const std::string how = mutated_elsewhere(def, site, names);
    if (how.empty()) return "";
    return fmt::format("a branch's value may be an existing tensor or a view of one, and {} after the select: the "
                       "original changes that tensor, a select a new one",
                       how);
}

}  // namespace graphmend::rules::control_flow

// GM401: what a site's surroundings show (see data_dependent_shape.hpp): a data test or a
// deferred message around it, the parameters and bindings of its function, and what a local
// it is assigned to feeds.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <utility>

#include "data_dependent_shape.hpp"
#include "graphmend/knowledge.hpp"
#include "rules/support/deferred_call.hpp"
#include "rules/support/scalar_reads.hpp"
#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"

namespace graphmend::rules::data_dependent_shape {

// The innermost function_definition around `n` (lambdas skipped), or invalid.
Node function_of(const Node& n) {
    Node def = analysis::enclosing_function(n);
    while (def && !def.is("function_definition")) def = analysis::enclosing_function(def);
    return def;
}

// True when `n` lies in the test of an if / elif / assert / conditional expression whose
// test reads data: the predicate rules own it (they rewrite `.item()` there, or refuse).
bool in_data_test(const Context& ctx, const Node& n) {
    Node child = n;
    for (Node p = n.parent(); p; child = p, p = p.parent()) {
        if (p.is("function_definition") || p.is("lambda") || p.is("block")) return false;
        if ((p.is("if_statement") || p.is("elif_clause")) && p.field("condition") == child) {
            return ctx.values.data_test(ctx.file, child);
        }
        if (p.is("assert_statement")) return true;
        if (p.is("conditional_expression")) {
            const auto parts = p.named_children();
            if (parts.size() == 3 && parts[1] == child) return ctx.values.data_test(ctx.file, child);
        }
    }
    return false;
}

// True when `n` is an argument of a print / logging / warnings call that the
// deferred-side-effect rule hands to the runtime (which defers `.item()` there).
bool in_message(const Context& ctx, const Node& n) {
    for (Node p = n.parent(); p && !p.is("function_definition") && !p.is("block"); p = p.parent()) {
        if (p.is("call") && deferred_call(ctx, p)) return true;
    }
    return false;
}

// True when `name` is a parameter of function `def`.
bool is_parameter(const Node& def, std::string_view name) {
    for (const Node& p : def.field("parameters").named_children()) {
        const Node n = p.is("identifier") ? p : p.field("name") ? p.field("name") : Node();
        if (n && n.text() == name) return true;
        if (p.is("typed_parameter") && !p.named_children().empty() && p.named_children()[0].text() == name) return true;
    }
    return false;
}

// True when `expr` is arithmetic on a parameter of a `forward` written with neither
// annotation nor default, directly or through the locals assigned such arithmetic
// (`start = (2 * seq_len - 1) // 2`): the value analysis takes such a parameter for a tensor
// when it finds no caller (a submodule called through an attribute bound to one of several
// classes), which is no evidence that a slice bound made of it is one (swin2sr's
// `height * self.upscale`, Mega's `seq_len`). A parameter read through an attribute, an item
// or a call (`x.shape[1]`, `ids[i]`) does not count.
bool arithmetic_on_bare_forward_parameter(const Node& def, const Node& expr, int depth) {
    const Node e = syntax::without_parens(expr);
    if (depth > 3) return false;
    if (e.is("binary_operator")) {
        return arithmetic_on_bare_forward_parameter(def, e.field("left"), depth) ||
               arithmetic_on_bare_forward_parameter(def, e.field("right"), depth);
    }
    if (e.is("unary_operator")) return arithmetic_on_bare_forward_parameter(def, e.field("argument"), depth);
    if (!e.is("identifier")) return false;
    if (def.field("name").text() == "forward") {
        for (const Node& param : def.field("parameters").named_children()) {
            if (param.is("identifier") && param.text() == e.text() && param.text() != "self") return true;
        }
    }
    bool found = false;
    syntax::walk(def.field("body"), [&](const Node& a) {
        if (found || a.is("function_definition") || a.is("class_definition") || a.is("lambda")) return false;
        if (a.is("assignment") && a.field("left").is("identifier") && a.field("left").text() == e.text() &&
            a.field("right")) {
            found = arithmetic_on_bare_forward_parameter(def, a.field("right"), depth + 1);
        }
        return !found;
    });
    return found;
}

// True when `name` is bound anywhere in the body of `def` (not counting nested functions).
bool assigned_in_body(const Node& def, std::string_view name) {
    bool found = false;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (found || n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if ((n.is("assignment") || n.is("augmented_assignment") || n.is("for_statement")) && n.field("left")) {
            each_bound_name(n.field("left"), [&](const Node& t) { found = found || t.text() == name; });
        }
        return !found;
    });
    return found;
}

// The local a value is assigned to (`NAME = <n>`), or "".
std::string assigned_local(const Node& n) {
    for (Node p = n.parent(); p && !p.is("block") && !p.is("lambda"); p = p.parent()) {
        if (p.is("assignment")) {
            const Node right = p.field("right");
            if (p.field("left").is("identifier") && right && right.begin() <= n.begin() && n.end() <= right.end()) {
                return text(p.field("left"));
            }
            return "";
        }
        if (p.is("call") || p.is("expression_statement")) return "";  // an argument: not the local's value
    }
    return "";
}

namespace {

// What feeds() needs of a function, from one walk of its body (outside nested functions and
// lambdas): how often each local is assigned, each assignment to a plain name with the names
// its right side reads, and where each name is read (offsets from the function's first byte).
struct Flows {
    std::map<std::string, int> assignments;  // a parameter counts 2
    std::vector<std::pair<std::string, std::set<std::string>>> assigned_from;  // in order
    std::map<std::string, std::vector<std::size_t>> read_by;  // name -> indices into assigned_from
    std::map<std::string, std::vector<std::uint32_t>> reads;
};

Flows flows_of(const Node& def) {
    Flows f;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("lambda")) return false;
        if (n.is("identifier") && is_read(n)) f.reads[text(n)].push_back(n.begin() - def.begin());
        if (!n.is("assignment") || !n.field("left").is("identifier")) return true;
        ++f.assignments[text(n.field("left"))];
        if (const Node right = n.field("right")) {
            std::set<std::string> read;
            syntax::walk(right, [&](const Node& r) {
                if (r.is("identifier") && is_read(r)) read.insert(text(r));
                return true;
            });
            for (const std::string& r : read) f.read_by[r].push_back(f.assigned_from.size());
            f.assigned_from.emplace_back(text(n.field("left")), std::move(read));
        }
        return true;
    });
    if (const Node params = def.field("parameters")) {
        syntax::walk(params, [&](const Node& n) {
            if (n.is("identifier")) f.assignments[text(n)] += 2;
            return true;
        });
    }
    return f;
}

}  // namespace

// What the local `name` (and locals computed from it) feeds in `def`: shape arguments,
// slice bounds, loop bounds. Empty when nothing shows. The function's Flows are remembered
// (analysis::FunctionMemo): a function with many sites is walked once.
std::vector<std::string> feeds(const Node& def, const std::string& name) {
    thread_local analysis::FunctionMemo<Flows> memo;
    const Flows& flows = memo.get(def, flows_of);
    std::set<std::string> names{name};
    // Locals assigned once (a name assigned again, or a parameter, holds other values too).
    const auto once = [&](const std::string& local) {
        const auto it = flows.assignments.find(local);
        return it != flows.assignments.end() && it->second == 1;
    };
    // Locals computed from it (`used = sum(sizes)`): three rounds over the assignments in
    // order, each taking the ones that read a name taken so far (in this round too). A round
    // visits only those, in order: the assignments that read each name taken (Flows::read_by).
    const auto readers = [&](const std::string& n) -> const std::vector<std::size_t>* {
        const auto it = flows.read_by.find(n);
        return it == flows.read_by.end() ? nullptr : &it->second;
    };
    for (int round = 0; round < 3; ++round) {
        std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> next;
        for (const std::string& n : names) {
            if (const auto* r = readers(n)) {
                for (const std::size_t k : *r) next.push(k);
            }
        }
        std::size_t done = 0;  // assignments before this index were visited in this round
        while (!next.empty()) {
            const std::size_t k = next.top();
            next.pop();
            if (k < done) continue;
            done = k + 1;
            const std::string& local = flows.assigned_from[k].first;
            if (!once(local) || !names.insert(local).second) continue;
            if (const auto* r = readers(local)) {
                for (const std::size_t later : *r) {
                    if (later > k) next.push(later);
                }
            }
        }
    }
    std::vector<std::uint32_t> reads;  // of the names, in source order
    for (const std::string& n : names) {
        if (const auto it = flows.reads.find(n); it != flows.reads.end()) {
            reads.insert(reads.end(), it->second.begin(), it->second.end());
        }
    }
    std::sort(reads.begin(), reads.end());
    std::vector<std::string> out;
    auto add = [&](std::string what) {
        if (std::find(out.begin(), out.end(), what) == out.end()) out.push_back(std::move(what));
    };
    for (const std::uint32_t at : reads) {
        const std::uint32_t begin = def.begin() + at;
        const Node n = def.descendant(begin, begin + 1, true);
        for (Node p = n.parent(); p && !p.is("expression_statement") && !p.is("block"); p = p.parent()) {
            if (p.is("slice")) {
                add(fmt::format("a slice bound at line {}", p.position().line));
                break;
            }
            if (p.is("call")) {
                const Node fn = p.field("function");
                const std::string_view callee = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
                if (callee == "range" || knowledge::shape_call(callee)) {
                    add(fmt::format("{} sizes at line {}", fn.text(), p.position().line));
                    break;
                }
            }
            if (p.is("for_statement") && p.field("right").begin() <= n.begin() && n.end() <= p.field("right").end()) {
                add(fmt::format("a loop at line {}", p.position().line));
                break;
            }
        }
    }
    return out;
}

}  // namespace graphmend::rules::data_dependent_shape

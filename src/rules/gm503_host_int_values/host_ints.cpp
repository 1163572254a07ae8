// Ints read back from a tensor built from ints: see src/rules/gm503_host_int_values/host_ints.hpp.
//
// What is proven before a read uses the list (each failure is the site's reason):
// - the tensor: a local assigned once, `T = torch.as_tensor(L, ...)` or `torch.tensor(L, ...)`
//   with dtype torch.long / torch.int64 or none; L a local assigned once, `L = []`, filled only
//   by `L.append(E)` before T is made, E a tuple of ints (or an int) computed from shapes
//   (`h, w = x.shape`, `x.size(k)`, `len(...)`, literals, + - * //): T holds exactly L's values;
// - neither changes afterwards: L is only read (iterated, indexed, `len`, passed to project
//   functions that only read it), and T is read only through ops that make new tensors (no
//   in-place method, `out=`, item assignment, `+=`, no alias or view that escapes), in its
//   function and in every project function it is passed to;
// - across calls: a parameter P read back gets, at every call in the project, a tensor so
//   built, and a sibling parameter S gets the list it was built from (then the read uses S);
//   or, when there is no such S, P is only iterated by reads fixed here, and each call passes
//   the list instead (then the function is not changed);
// - the values read: each element (a 0-d long tensor before, a Python int after) is used only
//   where the two give the same result: sizes and steps of torch factories and shape methods,
//   slice bounds, + - * // with ints and other such elements (a local accumulating them
//   included), `x - 0.5`-like offsets given to `torch.linspace`, and products / quotients with
//   a tensor subscript that keeps a dimension (the tensor's dtype wins either way).
#include "host_ints.hpp"
#include "host_ints.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "host_ints_internal.hpp"

namespace graphmend::rules {

using namespace host_ints;

namespace {

// The iterated expression of a loop or comprehension clause, through `enumerate(X)`, and the
// target pattern that receives X's elements.
struct Iteration {
    Node iterable;  // X
    Node element;   // the target pattern of X's elements
};

std::optional<Iteration> iteration(const Node& left, const Node& right) {
    Node r = syntax::without_parens(right);
    Node l = left;
    if (r.is("call") && r.field("function").is("identifier") && r.field("function").text() == "enumerate") {
        const auto args = r.field("arguments").named_children();
        if (args.size() != 1 || args[0].is("keyword_argument") || args[0].is("list_splat")) return std::nullopt;
        r = syntax::without_parens(args[0]);
        l = syntax::without_parens(l);
        if (!(l.is("pattern_list") || l.is("tuple_pattern"))) return std::nullopt;
        auto parts = l.named_children();
        std::erase_if(parts, [](const Node& x) { return x.is("comment"); });
        if (parts.size() != 2) return std::nullopt;
        l = parts[1];
    }
    if (!r.is("identifier")) return std::nullopt;
    return Iteration{r, l};
}

// A read of a tensor in a function: a loop or comprehension clause over it, or its `.tolist()`.
struct Read {
    Node site;
    Node tensor;
    Node element;  // the target pattern (invalid for .tolist())
    Node scope;    // the loop or comprehension
};

// The reads in `def`'s own scope: `for` loops and comprehension clauses over a name (through
// `enumerate`), and `.tolist()` of a name.
std::vector<Read> reads_in(const Node& def) {
    std::vector<Read> reads;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (is_scope(n)) return false;
        if (n.is("for_statement")) {
            if (auto it = iteration(n.field("left"), n.field("right"))) reads.push_back({n, it->iterable, it->element, n});
        } else if (is_comprehension(n)) {
            for (const Node& c : n.named_children()) {
                if (!c.is("for_in_clause")) continue;
                if (auto it = iteration(c.field("left"), c.field("right"))) {
                    reads.push_back({n, it->iterable, it->element, n});
                }
            }
        } else if (n.is("call") && n.field("function").is("attribute") &&
                   n.field("function").field("attribute").text() == "tolist" &&
                   n.field("arguments").named_children().empty() &&
                   syntax::without_parens(n.field("function").field("object")).is("identifier")) {
            reads.push_back({n, syntax::without_parens(n.field("function").field("object")), {}, {}});
        }
        return true;
    });
    return reads;
}

// True when the read's elements are read into Python (always for `.tolist()`): only a loop
// whose elements are read into Python breaks the graph.
bool read_into_python(const Context& ctx, const Node& def, const Read& r) {
    if (!r.element) return true;
    std::set<std::string> names;
    for (const Node& t : target_names(r.element)) names.insert(text(t));
    const Node region = is_comprehension(r.scope) ? r.scope : r.scope.field("body");
    if (feeds_sizes(ctx, region, names)) return true;
    // values accumulated in the loop (`current += h * w`) feed sizes after it too
    bool later = false;
    syntax::walk(r.scope.field("body") ? r.scope.field("body") : r.scope, [&](const Node& n) {
        if (later || is_scope(n)) return false;
        if (n.is("augmented_assignment") && n.field("left").is("identifier")) {
            bool reads = false;
            syntax::walk(n.field("right"), [&](const Node& t) {
                reads = reads || (t.is("identifier") && names.contains(text(t)));
                return !reads;
            });
            if (reads) later = feeds_sizes(ctx, def.field("body"), {text(n.field("left"))});
        }
        return !later;
    });
    return later;
}

// The names `r` binds to each element, checked against the origin `o` of the tensor `name`
// (into `names`); why they cannot stand for its ints ("" when they can).
std::string element_names(const Read& r, const Origin& o, const std::string& name, std::vector<std::string>& names) {
    // The elements: a tuple pattern of `width` names (rank 2) or one name (rank 1).
    const Node el = syntax::without_parens(r.element);
    if (o.rank == 2 && (el.is("pattern_list") || el.is("tuple_pattern"))) {
        for (const Node& t : el.named_children()) {
            if (t.is("comment")) continue;
            if (!t.is("identifier")) names.clear(), names.push_back("");
            names.push_back(text(t));
        }
        if (names.size() != o.width || std::find(names.begin(), names.end(), "") != names.end()) {
            return fmt::format("the loop unpacks each row of `{}` into other than {} names", name,
                           o.width);
        }
    } else if (o.rank == 1 && el.is("identifier")) {
        names.push_back(text(el));
    } else {
        return fmt::format("each element of `{}` is kept whole (a tensor row, not the ints in it)", name);
    }
    return "";
}

// The matching of one function's reads: the origins of the tensors it reads, and the reads
// fixed at the call sites.
struct ReadsMatcher {
    const Context& ctx;
    const Node& def;
    Matcher m;
    std::vector<Read> reads;
    std::vector<HostRead> out;
    // (parameter) -> index in `out` of the read fixed at the call sites
    std::map<std::string, std::size_t> at_calls;
    std::map<std::string, Origin> origins;

    Origin& origin_of(const std::string& name) {
        auto it = origins.find(name);
        if (it == origins.end()) {
            m.visiting.clear();
            it = origins.emplace(name, m.origin(ctx.file, def, name, 0)).first;
        }
        return it->second;
    }

    // Adds the read `r` to `out` (refused, fixed with the list at hand, or fixed at the calls),
    // unless it reads no host-built tensor into Python.
    void match(const Read& r) {
        const std::string name = text(r.tensor);
        if (!ctx.values.eval(ctx.file, r.tensor).tensor()) return;
        if (!read_into_python(ctx, def, r)) return;
        Origin& o = origin_of(name);
        if (!o.found) return;
        HostRead h;
        h.site = r.site;
        h.reads.push_back(r.site);
        h.what = r.element ? fmt::format("for ... in {}", name) : fmt::format("{}.tolist()", name);
        h.refused = o.refused;
        std::string replacement;
        if (h.refused.empty() && r.element) {
            std::vector<std::string> names;
            h.refused = element_names(r, o, name, names);
            if (h.refused.empty()) h.refused = element_uses(ctx, def, r.scope, names);
        }
        if (!h.refused.empty()) {
            out.push_back(std::move(h));
            return;
        }
        if (!o.list.empty()) {
            // The list is at hand: where the tensor is made, or a sibling parameter.
            replacement = r.element ? o.list
                                    : (o.rank == 2 ? fmt::format("[list(_graphmend_row) for _graphmend_row in {}]", o.list)
                                                   : fmt::format("list({})", o.list));
            const Node target = r.element ? r.tensor : r.site;
            h.edits.push_back({target.begin(), target.end(), replacement});
            h.detail = fmt::format("reads `{}`, the list of ints `{}` was made from, instead of the tensor", o.list,
                                   name);
            out.push_back(std::move(h));
            return;
        }
        // No list in this function: the calls pass it, when the parameter is only iterated here.
        if (!r.element) {
            h.refused = fmt::format("`{}` has no list of its values here (no parameter that every call passes it in)",
                                    name);
            out.push_back(std::move(h));
            return;
        }
        if (auto it = at_calls.find(name); it != at_calls.end()) {
            out[it->second].reads.push_back(r.site);
            return;
        }
        std::vector<edits::Edit> edits;
        std::vector<std::string> where;
        std::string why = only_iterated(name);
        if (why.empty()) why = calls_pass_lists(name, edits, where);
        if (!why.empty()) {
            h.refused = why;
            out.push_back(std::move(h));
            return;
        }
        h.edits = std::move(edits);
        h.detail = fmt::format("the call{} at {} pass{} the list of ints `{}` is made from; `{}` is only iterated here",
                               where.size() > 1 ? "s" : "", fmt::join(where, ", "), where.size() > 1 ? "" : "es",
                               name, name);
        at_calls[name] = out.size();
        out.push_back(std::move(h));
    }

    // Why the parameter `name` is read other than by the iterations matched here ("" when it is
    // not).
    std::string only_iterated(const std::string& name) const {
        // Every read of the parameter must be the iteration of a read matched here.
        std::string why;
        syntax::walk(def.field("body"), [&](const Node& n) {
            if (!why.empty() || is_scope(n)) return false;
            if (n.is("identifier") && n.text() == name && is_read(n)) {
                bool iterated = false;
                for (const Read& other : reads) iterated = iterated || (other.element && other.tensor == n);
                if (!iterated) {
                    why = fmt::format("`{}` is also used at line {} other than iterated, and the function has no list "
                                      "of its values",
                                      name, line_of(n));
                }
            }
            return why.empty();
        });
        return why;
    }

    // The edits making every call pass the list `name` is made from (into `edits`, with the lines
    // into `where`), and why some call cannot ("" when all can).
    std::string calls_pass_lists(const std::string& name, std::vector<edits::Edit>& edits,
                                 std::vector<std::string>& where) {
        std::string why;
        std::string escapes;
        const auto sites = m.call_sites(ctx.file, def, escapes);
        why = escapes;
        for (const auto& s : sites) {
            if (!why.empty()) break;
            bool ok = true;
            const Node arg = argument_for(s.call, def, name, ok);
            if (s.file != ctx.file) {
                why = fmt::format("a call in {} passes `{}`", m.file_name(s.file), name);
                break;
            }
            Node caller = analysis::enclosing_function(s.call);
            while (caller && !caller.is("function_definition")) caller = analysis::enclosing_function(caller);
            m.visiting.clear();
            const Origin c = (ok && arg && caller && syntax::without_parens(arg).is("identifier"))
                                 ? m.origin(ctx.file, caller, text(syntax::without_parens(arg)), 0)
                                 : Origin{};
            if (!c.found || !c.refused.empty() || c.list.empty()) {
                why = fmt::format("the call at line {} does not pass a tensor with its list at hand{}",
                                  line_of(s.call), c.refused.empty() ? "" : ": " + c.refused);
                break;
            }
            edits.push_back({arg.begin(), arg.end(), c.list});
            where.push_back(fmt::format("line {}", line_of(s.call)));
        }
        return why;
    }
};

}  // namespace

std::vector<HostRead> match_host_reads(const Context& ctx, const Node& def) {
    ReadsMatcher matcher{ctx, def, Matcher{ctx, {}}, reads_in(def), {}, {}, {}};
    for (const Read& r : matcher.reads) matcher.match(r);
    return std::move(matcher.out);
}

}  // namespace graphmend::rules

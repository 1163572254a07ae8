// Whether the elements read back are used where a Python int gives the same result as a 0-d
// long tensor, and whether they are read into Python at all, for the host-int matcher (see
// host_ints_internal.hpp).
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "graphmend/knowledge.hpp"
#include "host_ints_internal.hpp"

namespace graphmend::rules::host_ints {

namespace {

// True when `v` may be a tensor and nothing a size method or an operator would treat otherwise
// (a number, a string, a sequence).
bool tensorish(const analysis::Value& v, bool unknown_too = false) {
    return (v.tensor() || (unknown_too && v.kinds != 0)) &&
           (v.kinds & (analysis::kNumber | analysis::kBool | analysis::kStr | analysis::kSeq | analysis::kSize)) == 0;
}

// The check of element_uses: the names read back (and the locals accumulating them), and why
// a use of them may differ between Python ints and 0-d long tensors (`why`, set by `fail`).
struct ElementUses {
    const Context& ctx;
    const Node& def;
    const Node& scope;
    std::vector<std::string> names;
    std::set<std::string> ints;
    std::set<std::string> accumulators;
    bool comprehension;
    Node region;
    std::string why;

    ElementUses(const Context& c, const Node& d, const Node& s, std::vector<std::string> n)
        : ctx(c), def(d), scope(s), names(std::move(n)), ints(names.begin(), names.end()),
          comprehension(is_comprehension(s)), region(comprehension ? s : d.field("body")) {}

    // Records why the use of `o` may differ; false.
    bool fail(const Node& o, std::string what) {
        why = fmt::format("`{}` at line {} {}", o.text(), line_of(o), what);
        return false;
    }

    // Where an int-valued expression `e` (an element, or computed from them) goes.
    bool use(Node e, bool is_float) {
        const Node o = outer(e);
        const Node p = o.parent();
        if (p.is("slice")) return is_float ? fail(o, "is a float slice bound") : true;
        if (p.is("binary_operator")) return arithmetic(o, p, is_float);
        Node arg = o;
        Node argp = p;
        if (argp.is("keyword_argument")) {
            arg = argp;
            argp = argp.parent();
        }
        if (argp.is("argument_list")) return argument(o, arg, argp, is_float);
        if (p.is("list_comprehension") && p.field("body") == o && !is_float) return split_sizes(o, p);
        if ((p.is("assignment") || p.is("augmented_assignment")) && p.field("right") == o && !is_float &&
            p.field("left").is("identifier") && accumulators.contains(text(p.field("left")))) {
            return true;  // its reads are checked as the elements' are
        }
        if (p.is("augmented_assignment") && p.field("left") == o) return fail(o, "is changed in place");
        static constexpr syntax::TypeRow<std::string_view> kinds[]{
            {"subscript", "an index"},           {"comparison_operator", "a comparison"},
            {"return_statement", "a return value"}, {"list", "a list item"},
            {"tuple", "a tuple item"},           {"expression_list", "a tuple item"},
            {"assignment", "a value assigned"},  {"unary_operator", "an operand"},
            {"boolean_operator", "a test"},      {"if_statement", "a test"},
            {"conditional_expression", "a conditional value"}};
        const auto* kind = syntax::row_for(kinds, p);
        return fail(o, fmt::format("is used as {}, where a 0-d tensor and a Python int may differ",
                                   kind != nullptr ? std::string(*kind) : std::string(p.type())));
    }

    // `o`, an operand of the binary operator `p`.
    bool arithmetic(const Node& o, const Node& p, bool is_float) {
        const auto op = p.field("operator").text();
        const Node other = syntax::without_parens(p.field("left") == o ? p.field("right") : p.field("left"));
        // A tensor that keeps a dimension (a subscript with a slice or None): its dtype wins over
        // a 0-d tensor and a Python int alike, and the int is exact in it.
        if (!is_float && (op == "*" || op == "/" || op == "+" || op == "-") && other.is("subscript") &&
            (tensorish(ctx.values.eval(ctx.file, other)) || tensorish(ctx.values.eval(ctx.file, other.field("value"))))) {
            bool keeps = false;
            for (const Node& i : other.named_children()) {
                if (i == other.field("value")) continue;
                syntax::walk(i, [&](const Node& t) {
                    keeps = keeps || t.is("slice") || t.is("none");
                    return !t.is("subscript") && !t.is("call");
                });
            }
            if (keeps) return true;
        }
        if (is_float) return fail(o, "is a float used in arithmetic");
        if (op == "+" || op == "-" || op == "*" || op == "//") {
            bool other_int = other.is("integer");
            if (other.is("identifier") && ints.contains(text(other))) other_int = true;
            if (!other_int && other.is("binary_operator")) {
                // `current + h * w`: the other side is an int expression of elements
                bool all = true;
                syntax::walk(other, [&](const Node& t) {
                    if (t.is("identifier")) all = all && ints.contains(text(t));
                    else if (t.is("binary_operator")) {
                        const auto o2 = t.field("operator").text();
                        all = all && (o2 == "+" || o2 == "-" || o2 == "*" || o2 == "//");
                    } else if (t.named() && !t.is("integer") && !t.is("parenthesized_expression")) {
                        all = false;
                    }
                    return all;
                });
                other_int = all;
            }
            if (other_int) return use(p, false);
            // `h - 0.5`: exact in float32 and float64 for sizes below 2**22.
            if (other.is("float") && op != "//" && (op == "+" || op == "-")) {
                const double v = std::strtod(text(other).c_str(), nullptr);
                if (std::abs(v) < 1024 && v * 2 == std::floor(v * 2)) return use(p, true);
            }
        }
        return fail(o, "is combined with a value where a 0-d tensor and a Python number may differ");
    }

    // `arg` (`o`, or the keyword argument around it), an argument in the argument_list `argp`.
    bool argument(const Node& o, const Node& arg, const Node& argp, bool is_float) {
        const Node call = argp.parent();
        const Node fn = call.field("function");
        const std::string ext = ctx.project.external_name(ctx.file, fn);
        const std::string_view method = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
        if (ext.starts_with("torch.") && knowledge::size_factory(method)) {
            if (arg.is("keyword_argument") && arg.field("name").text() != "steps" &&
                arg.field("name").text() != "start" && arg.field("name").text() != "end" &&
                arg.field("name").text() != "size") {
                return fail(o, "is an argument other than a size");
            }
            if (is_float && method != "linspace" && method != "logspace" && method != "arange") {
                return fail(o, "is a float size");
            }
            return true;
        }
        // `view`, `reshape`, ... exist on tensors only; `split` on strings too.
        if (!ext.starts_with("torch.") && fn.is("attribute") && knowledge::size_method(method) && !is_float &&
            tensorish(ctx.values.eval(ctx.file, fn.field("object")), method != "split")) {
            if (arg.is("keyword_argument") && arg.field("name").text() != "size" &&
                arg.field("name").text() != "split_size_or_sections" && arg.field("name").text() != "sizes") {
                return fail(o, "is an argument other than a size");
            }
            return true;
        }
        return fail(o, fmt::format("is passed to `{}`, where a 0-d tensor and a Python int may differ", fn.text()));
    }

    // `o`, the body of the list comprehension `p`.
    bool split_sizes(const Node& o, const Node& p) {
        // `[h * w for h, w in shapes]` given as sizes to `split`.
        const Node c = outer(p);
        const Node cp = c.parent();
        if (cp.is("argument_list")) {
            const Node fn = cp.parent().field("function");
            const std::string_view method = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
            const std::string ext = ctx.project.external_name(ctx.file, fn);
            const auto args = cp.named_children();
            const bool first = !args.empty() && args[0] == c;
            if (first && fn.is("attribute") && (method == "split" || method == "split_with_sizes") &&
                !ext.starts_with("torch.") && tensorish(ctx.values.eval(ctx.file, fn.field("object")))) {
                return true;
            }
            if (ext == "torch.split" && args.size() >= 2 && args[1] == c) return true;
        }
        return fail(o, "makes a list used other than as split sizes");
    }

    // Locals accumulating the elements (`current += height * width`, from `current = 0`): every
    // binding an int literal, or + - * // of elements, accumulators and int literals (a new value
    // each time, never one of the elements itself).
    void find_accumulators() {
        for (int round = 0; round < 4; ++round) {
            std::set<std::string> candidates;
            syntax::walk(def.field("body"), [&](const Node& n) {
                if (is_scope(n)) return false;
                if ((n.is("assignment") || n.is("augmented_assignment")) && n.field("left").is("identifier") &&
                    !ints.contains(text(n.field("left")))) {
                    candidates.insert(text(n.field("left")));
                }
                return true;
            });
            bool grew = false;
            for (const auto& local : candidates) {
                if (accumulates(local)) {
                    ints.insert(local);
                    accumulators.insert(local);
                    names.push_back(local);
                    grew = true;
                }
            }
            if (!grew) break;
        }
    }

    // True when every binding of `local` is an int literal or + - * // of `ints` and int
    // literals, and one reads them.
    bool accumulates(const std::string& local) const {
        bool all = true;
        bool reads_elements = false;
        for (const Node& b : bindings(def, local)) {
            if (!(b.is("assignment") || b.is("augmented_assignment")) || !b.field("left").is("identifier")) {
                all = false;
                break;
            }
            if (b.is("augmented_assignment")) {
                const auto op = b.field("operator").text();
                all = all && (op == "+=" || op == "-=" || op == "*=");
            }
            const Node r = syntax::without_parens(b.field("right"));
            if (r.is("integer")) continue;
            if (!r.is("binary_operator") && !b.is("augmented_assignment")) {
                all = false;
                break;
            }
            syntax::walk(r, [&](const Node& t) {
                if (t.is("identifier")) {
                    all = all && ints.contains(text(t));
                    reads_elements = true;
                } else if (t.is("binary_operator")) {
                    const auto o2 = t.field("operator").text();
                    all = all && (o2 == "+" || o2 == "-" || o2 == "*" || o2 == "//");
                } else if (t.named() && !t.is("integer") && !t.is("parenthesized_expression")) {
                    all = false;
                }
                return all;
            });
        }
        return all && reads_elements;
    }

    // True when `name` is bound only by the read's target and used only where a Python int and a
    // 0-d tensor agree; else false, with `why` set.
    bool check(const std::string& name) {
        // Bound only by the read's target.
        const auto bs = comprehension || accumulators.contains(name) ? std::vector<Node>{} : bindings(def, name);
        for (const Node& b : bs) {
            if (!(b == scope)) {
                why = fmt::format("`{}` is bound at line {} too", name, line_of(b));
                return false;
            }
        }
        bool ok = true;
        const auto read = [&](const Node& n) {
            const Node np = outer(n).parent();
            if (np.is("augmented_assignment") && np.field("left") == outer(n)) {
                if (accumulators.contains(name)) return true;
                why = fmt::format("`{}` at line {} is changed in place", name, line_of(n));
                return false;
            }
            return use(n, false);
        };
        syntax::walk(region, [&](const Node& n) {
            if (!ok || is_scope(n)) return false;
            // Another comprehension binding the same name is another scope.
            if (is_comprehension(n) && !(n == scope)) {
                bool rebinds = false;
                for (const Node& c : n.named_children()) {
                    if (!c.is("for_in_clause")) continue;
                    for (const Node& t : target_names(c.field("left"))) rebinds = rebinds || t.text() == name;
                }
                if (rebinds) return false;
            }
            if ((n.is("for_in_clause") || n.is("for_statement")) && within(n, scope) &&
                (n == scope || n.is("for_in_clause"))) {
                // the target binding the names is no use of them
                for (const Node& c : n.children()) {
                    if (c == n.field("left")) continue;
                    syntax::walk(c, [&](const Node& x) {
                        if (!ok || is_scope(x)) return false;
                        if (x.is("identifier") && x.text() == name && is_read(x)) ok = read(x);
                        return ok;
                    });
                }
                return false;
            }
            if (n.is("identifier") && n.text() == name && is_read(n)) ok = read(n);
            return ok;
        });
        return ok;
    }
};

}  // namespace

// Why using Python ints for the names `names` (elements read back, bound in `scope`) may give
// other results than 0-d long tensors ("" when it cannot). `scope` is the loop or comprehension
// whose target binds them; `def` the function.
std::string element_uses(const Context& ctx, const Node& def, const Node& scope, std::vector<std::string> names) {
    ElementUses check(ctx, def, scope, std::move(names));
    if (!check.comprehension) check.find_accumulators();
    for (const auto& name : check.names) {
        if (!check.check(name)) return check.why;
    }
    return "";
}

// True when a name of `names` (or a value computed from one in its statement) is read into
// Python where it is used: a slice bound, a size of a torch factory or a shape method. A loop
// whose elements feed none of these does not break the graph (GM401's `feeds` likewise).
bool feeds_sizes(const Context& ctx, const Node& region, const std::set<std::string>& names) {
    bool found = false;
    syntax::walk(region, [&](const Node& n) {
        if (found || is_scope(n)) return false;
        if (!n.is("identifier") || !names.contains(text(n)) || !is_read(n)) return true;
        for (Node p = n.parent(); p && !p.is("block") && !p.is("expression_statement"); p = p.parent()) {
            if (p.is("slice")) found = true;
            if (p.is("call")) {
                const Node fn = p.field("function");
                const std::string_view m = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
                const bool torch_fn = ctx.project.external_name(ctx.file, fn).starts_with("torch.");
                if ((torch_fn && knowledge::size_factory(m)) || (!torch_fn && knowledge::size_method(m))) found = true;
            }
            if (found) break;
        }
        return !found;
    });
    return found;
}

}  // namespace graphmend::rules::host_ints

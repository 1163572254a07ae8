// Rule GM401 data-dependent-shape (report only: it never rewrites).
//
// What it does: lists, in code that runs under torch.compile, the graph breaks that no
// source rewrite of graphmend removes, so that `graphmend check` tells users why their
// breaks remain instead of finding "0 sites":
//   - values read out of tensors into Python: `.tolist()`, and `.item()`, `int(t)`,
//     `float(t)`, `bool(t)` outside a test the predicate rules rewrite and outside a
//     deferred message (torch 2.12: GB0124 unless capture_scalar_outputs);
//   - ops whose output shape depends on the data: `nonzero`, `argwhere`, one-argument
//     `torch.where`, `unique`, `masked_select`, boolean-mask indexing `x[x > 0]`
//     (GB0036 unless capture_dynamic_output_shape_ops);
//   - a `while` loop whose test reads tensor data (GB0170; a break inside a loop makes
//     Dynamo skip the whole frame, GB7000);
//   - a tensor passed where torch wants a size (`torch.arange(seq_len)`, `torch.zeros(n)`
//     with n a tensor): read into Python there (GB0124), the shape following the data;
//   - a tensor used as a slice bound (`x[start:end]`, read or stored): read into Python
//     through Tensor.__index__ (GB0124; torch 2.12.1 then skips the frame).
// Each is reported as refused, with what the value feeds (sizes, a loop bound) when the
// function shows it.
//
// Why not fixed: a select chooses between values of one shape; these produce Python
// values or shapes from the data, which only Dynamo's own options (dynamic shapes,
// capture flags) can trace.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>

#include "graphmend/knowledge.hpp"
#include "data_dependent_shape.hpp"
#include "graphmend/rule.hpp"
#include "rules/support/deferred_call.hpp"
#include "rules/support/help.hpp"
#include "rules/support/scalar_reads.hpp"
#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"

namespace graphmend::rules {

using syntax::Node;

using namespace data_dependent_shape;

namespace {

const RuleInfo kInfo{"GM401", "data-dependent-shape",
                     "values read out of tensors and data-dependent shapes under torch.compile (reported, not fixed)",
                     {.dynamic_shape = true}};

// Why a scalar read of `kind` ("item", "tolist", "int", "float", "bool") breaks. Dynamo at
// torch 2.12.1 (variables/tensor.py, method_tolist): `.tolist()` of an integer tensor reads
// each element as `.item()` does (GB0124); of any other dtype it breaks whatever the settings
// (GB0109).
std::string scalar_read_reason(const std::string& kind) {
    if (kind == "tolist") {
        return "`.tolist()` reads tensor values into Python (an integer tensor: GB0124, unless "
               "capture_scalar_outputs; any other dtype: GB0109)";
    }
    return fmt::format("`{}` reads tensor values into Python (GB0124, unless capture_scalar_outputs)",
                       kind == "item" ? ".item()" : kind + "()");
}

class DataDependentShapeRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        // What other rules report is theirs (their claims): the spans of an expert dispatch or a
        // row subset with everything in them, and the reads of tensors built from ints (loops,
        // comprehensions, `.tolist()`), whose contents are still checked here.
        const Claims& claims = ctx.claims();
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (claims.covers(n, ClaimKind::Reported)) return false;
            if (claims.exact(n, ClaimKind::ReportedNode) && (n.is("for_statement") || n.is("call"))) {
                return n.is("for_statement");
            }
            if (n.is("for_statement")) {
                // Not a loop whose iterable another rule's fix rewrites (a fixed dispatch's hit rows).
                if (!claims.exact(n.field("right"), ClaimKind::Reported)) check_tensor_loop(ctx, def, n, out);
                return true;
            }
            if (!n.is("call") && !n.is("subscript") && !n.is("while_statement")) return true;
            if (n.is("while_statement")) {
                if (ctx.values.data_test(ctx.file, n.field("condition"))) {
                    out.push_back(refused(n, fmt::format("while {}", n.field("condition").text()), "GB0170",
                                          "a loop whose test reads tensor data: the trip count depends on the "
                                          "data, which no select can express"));
                }
                return true;
            }
            const std::size_t before = out.size();
            if (n.is("subscript")) {
                check_slice_bounds(ctx, def, n, out);
                check_mask_index(ctx, n, out);
                if (out.size() == before) {
                    if (auto why = dynamo_index_read(ctx, n)) {
                        out.push_back(refused(n, text(n), "GB0033", why->first, why->second));
                    }
                }
                return true;
            }
            if (auto why = dynamo_builtin_compare(ctx, n)) {
                out.push_back(
                    refused(n, fmt::format("{}(...)", n.field("function").text()), "GB0033", why->first, why->second));
                return true;
            }
            check_call(ctx, def, n, out);
            return true;
        });
    }

private:
    // The help line, unless given: the Dynamo setting that removes the break's kind
    // (knowledge::setting_for), or for a data-dependent loop what the user can change.
    static Site refused(const Node& n, std::string what, std::string graph_break, std::string reason,
                        std::string help = "") {
        if (help.empty()) {
            if (graph_break == "GB0124") help = setting_help(knowledge::DataBreak::ScalarRead);
            if (graph_break == "GB0036") help = setting_help(knowledge::DataBreak::DynamicShape);
            if (graph_break == "GB0170") {
                help = "no Dynamo setting removes it (measured, torch 2.12.1): a loop with a trip count known "
                       "without the data, or the loop moved out of the compiled function, would";
            }
        }
        Site site = new_site(kInfo, n, one_line(what, Blanks::Keep), std::move(graph_break));
        site.reason = std::move(reason);
        site.help = std::move(help);
        return site;
    }

    // A call that gives a boolean tensor of a tensor: `m.any(dim=-1)`, `m.all()`, `x.bool()`,
    // `x.eq(y)`, `x.isnan()`, `x.logical_and(y)`, and the torch functions of those names.
    static bool boolean_call(const Context& ctx, const Node& call) {
        const Node fn = call.field("function");
        if (!fn.is("attribute")) return false;
        // `x.to(torch.bool)`, `x.to(dtype=torch.bool)`, `x.type(torch.bool)`.
        if (const auto name = fn.field("attribute").text(); name == "to" || name == "type") {
            const auto args = call.field("arguments").named_children();
            const bool to_bool = std::any_of(args.begin(), args.end(), [](const Node& a) {
                return (a.is("keyword_argument") ? a.field("value") : a).text() == "torch.bool";
            });
            return to_bool && ctx.values.eval(ctx.file, fn.field("object")).tensor();
        }
        if (!knowledge::boolean_result(fn.field("attribute").text())) return false;
        if (ctx.project.external_name(ctx.file, fn).starts_with("torch.")) return true;  // torch.isnan(x)
        return ctx.values.eval(ctx.file, fn.field("object")).tensor();  // x.isnan()
    }

    static void check_mask_index(const Context& ctx, const Node& n, std::vector<Site>& out) {
        if (!ctx.values.eval(ctx.file, n.field("value")).tensor()) return;
        // A masked store `x[mask] = v` is an index_put_ that Dynamo traces: no break (measured
        // with torch 2.12.1). Only a read gives a tensor of data-dependent shape.
        if (const Node p = n.parent(); p.is("assignment") && p.field("left") == n) return;
        const Node mask = masked(ctx, n);
        if (!mask) return;
        // `x[m][k]` breaks at `x[m]`, which is reported on its own (at the same position).
        if (const Node inner = syntax::without_parens(n.field("value")); inner.is("subscript") && masked(ctx, inner)) {
            return;
        }
        if (one_element_reduction(ctx, mask)) {
            out.push_back(refused(n, std::string(n.text()), "GB0033",
                                  fmt::format("indexing by a one-element boolean (`{}`) reads its value into Python "
                                              "(a data-dependent operator), and the result's shape depends on it",
                                              mask.text()),
                                  kNoSettingIndex));
            return;
        }
        out.push_back(refused(n, std::string(n.text()), "GB0036",
                              "boolean-mask indexing: the result's shape depends on the data (a dynamic-shape "
                              "op), which no select can express"));
    }

    // `x[start:end]` with a tensor bound, read or stored (`cache[i, start:end] = v` after
    // `start = self.next_index[i]`): Python reads the bound through `Tensor.__index__`, a graph
    // break as `.item()` is (Dynamo: "Graph break from `Tensor.item()`", GB0124, unless
    // capture_scalar_outputs; measured with torch 2.12.1: `x[t:]` and `y[1:t + 2] = 0` break).
    // Reported once per subscript, at its first tensor bound.
    static void check_slice_bounds(const Context& ctx, const Node& def, const Node& n, std::vector<Site>& out) {
        for (Node index = n.field("subscript"); index; index = index.next_named_sibling()) {
            if (!index.is("slice")) continue;
            for (const Node& bound : index.named_children()) {
                // Only a tensor, and not one for its being a `forward` parameter alone.
                if (bound.is("comment") || !ctx.values.eval(ctx.file, bound).only(analysis::kTensor) ||
                    arithmetic_on_bare_forward_parameter(def, bound) || !tensor_size(ctx, def, bound)) {
                    continue;
                }
                out.push_back(refused(n, std::string(n.text()), "GB0124",
                                      fmt::format("`{}` is a tensor used as a slice bound: Python reads its value "
                                                  "(as `.item()` does) and the slice's length follows the data; a "
                                                  "bound known without the data would remove the break",
                                                  bound.text())));
                return;
            }
        }
    }

    // The boolean mask subscript `n` indexes by first (`x[mask]`, `x[mask, k]`), or invalid.
    // A mask after another index (`x[:, mask]`; tree-sitter gives each index its own `subscript`
    // field) is not looked for yet: T5's pruned-heads branch reads `position_bias[:, mask.bool()]`,
    // and GM202 refuses a file that keeps such a site, which would take LongT5's and Pop2Piano's
    // fixes away (measured: LongT5 7 -> 7 breaks at the pins, 6 -> 6 at 5.24, against 7 -> 0 and
    // 6 -> 0) for a branch taken only once heads are pruned. GM202 needs to weigh such a site
    // first (docs/rules/GM401.md).
    static Node masked(const Context& ctx, const Node& n) {
        const Node index = n.field("subscript");
        return index ? boolean_mask(ctx, n, index) : Node();
    }

    // Whether `index`, an index of subscript `n`, is a boolean tensor: a comparison, `~`, `&`, `|`,
    // a call that gives one (boolean_call), or a local assigned one.
    static Node boolean_mask(const Context& ctx, const Node& n, const Node& index) {
        Node mask = index;
        if (mask.is("identifier")) {
            const Node def = function_of(n);
            Node found;
            syntax::walk(def.field("body"), [&](const Node& a) {
                if (a.is("assignment") && a.field("left").is("identifier") && a.field("left").text() == mask.text() &&
                    a.field("right")) {
                    found = a.field("right");
                }
                return true;
            });
            if (!found) return {};
            mask = found;
        }
        while (mask.is("parenthesized_expression") && !mask.named_children().empty()) mask = mask.named_children()[0];
        const bool boolean = mask.is("comparison_operator") ||
                             (mask.is("unary_operator") && mask.field("operator").text() == "~") ||
                             (mask.is("binary_operator") && (mask.field("operator").text() == "&" ||
                                                              mask.field("operator").text() == "|")) ||
                             (mask.is("call") && boolean_call(ctx, mask));
        return boolean && ctx.values.eval(ctx.file, mask).tensor() ? mask : Node();
    }

    // `m.any()`, `m.all()`, `torch.any(m)`, `torch.all(m)`: a reduction to one element, given no
    // dimension. Indexing by it reads the value into Python (`aten._local_scalar_dense`, GB0033),
    // measured with torch 2.12.1, rather than picking rows by a mask of the data's shape.
    static bool one_element_reduction(const Context& ctx, const Node& mask) {
        if (!mask.is("call")) return false;
        const Node fn = mask.field("function");
        if (!fn.is("attribute")) return false;
        const auto name = fn.field("attribute").text();
        if (name != "any" && name != "all") return false;
        const auto args = mask.field("arguments").named_children();
        const bool torch_fn = ctx.project.external_name(ctx.file, fn).starts_with("torch.");
        std::size_t positional = 0;
        for (const Node& a : args) {
            if (a.is("keyword_argument")) {
                if (a.field("name").text() == "dim") return false;
            } else {
                ++positional;
            }
        }
        return positional == (torch_fn ? 1U : 0U);
    }

    static void check_call(const Context& ctx, const Node& def, const Node& call, std::vector<Site>& out) {
        const Node fn = call.field("function");
        const auto args = call.field("arguments").named_children();
        std::string method;
        Node receiver;
        if (fn.is("attribute")) {
            method = text(fn.field("attribute"));
            receiver = fn.field("object");
        }
        const bool torch_fn = fn.is("attribute") && ctx.project.external_name(ctx.file, fn).starts_with("torch.");
        // A tensor given where torch wants a size: `torch.arange(seq_len)` with seq_len a 0-d
        // tensor is read into Python there (GB0124 unless capture_scalar_outputs), and the
        // result's shape follows the data.
        const knowledge::SizeArguments* factory = torch_fn ? knowledge::size_arguments(method) : nullptr;
        if (factory) {
            // Which arguments are sizes (src/knowledge/shape_ops.cpp): `F.one_hot(x, num_classes)`:
            // the class count. `torch.full(size, fill_value)`: only the first argument (a tensor
            // fill value is traced); `torch.linspace(start, end, steps)` and `torch.logspace`: only
            // `steps` (InternLM's remote code passes a tensor fill value, reported as a size
            // before). The other factories: every positional argument (torch.randint's low and
            // high too: SymInts that torch reads into Python).
            std::vector<Node> given;
            if (factory->position >= 0) {
                const Node a = call_argument(call, static_cast<std::size_t>(factory->position), factory->keyword);
                if (a) given.push_back(a);
            } else {
                for (const Node& a : args) {
                    if (!a.is("keyword_argument") && !a.is("comment")) given.push_back(a);
                }
            }
            std::vector<Node> sizes;  // those arguments, with the items of a size tuple
            for (const Node& value : given) {
                if (value.is("tuple") || value.is("list")) {
                    for (const Node& item : value.named_children()) sizes.push_back(item);
                } else {
                    sizes.push_back(value);
                }
            }
            for (const Node& a : sizes) {
                if (!tensor_size(ctx, def, a)) continue;
                out.push_back(refused(call, fmt::format("{}(... {} ...)", fn.text(), a.text()), "GB0124",
                                      fmt::format("`{}` is a tensor used as a size: it is read into Python here and "
                                                  "the result's shape depends on the data; a size known without "
                                                  "the data (for example the configured maximum, sliced to the "
                                                  "positions used) would remove the break",
                                                  a.text())));
                return;
            }
        }
        // `x.narrow(dim, start, length)` with a tensor start or length: its value is read
        // (GB0033, "Data dependent operator", torch 2.12.1; measured: `x.narrow(1, counts[0], 1)`).
        if (method == "narrow" && (torch_fn || ctx.values.eval(ctx.file, receiver).tensor())) {
            const std::size_t first = torch_fn ? 2 : 1;  // torch.narrow(input, dim, start, length)
            for (const auto& [name, position] : {std::pair{"start", first}, std::pair{"length", first + 1}}) {
                const Node value = call_argument(call, position, name);
                if (!value || !ctx.values.eval(ctx.file, value).only(analysis::kTensor) || !tensor_size(ctx, def, value)) {
                    continue;
                }
                out.push_back(refused(call, fmt::format("{}(... {} ...)", fn.text(), value.text()), "GB0033",
                                      fmt::format("`{}` is a tensor used as narrow's {}: its value is read here (a "
                                                  "data-dependent operator), and the result's shape depends on it",
                                                  value.text(), name),
                                      kNoSettingIndex));
                return;
            }
        }
        // Data-dependent output shapes.
        if (knowledge::dynamic_shape_op(method) && (torch_fn || ctx.values.eval(ctx.file, receiver).tensor())) {
            out.push_back(refused(call, fmt::format("{}(...)", fn.text()), "GB0036",
                                  fmt::format("`{}` returns a tensor whose shape depends on the data (a dynamic-shape "
                                              "op), which no select can express",
                                              method)));
            return;
        }
        // Custom ops with data-dependent output shapes, and their wrappers (torchvision's nms).
        if (const std::string ext = ctx.project.external_name(ctx.file, fn); knowledge::dynamic_shape_call(ext)) {
            const std::string name = ext.substr(ext.find_last_of(".:") + 1);
            out.push_back(refused(call, fmt::format("{}(...)", fn.text()), "GB0036",
                                  fmt::format("`{}` returns a tensor whose shape depends on the data (a dynamic-shape "
                                              "op), which no select can express",
                                              name)));
            return;
        }
        if (torch_fn && method == "where" && args.size() == 1 && !args[0].is("keyword_argument")) {
            out.push_back(refused(call, fmt::format("{}(...)", fn.text()), "GB0036",
                                  "one-argument torch.where returns indices whose count depends on the data "
                                  "(a dynamic-shape op), which no select can express"));
            return;
        }
        // Values read out of tensors into Python.
        const auto read = torch_fn ? std::nullopt : scalar_read(ctx, call);
        if (!read) return;
        const std::string& kind = read->kind;
        const Node tensor = read->tensor;
        if (in_data_test(ctx, call) || in_message(ctx, call)) return;
        const std::string local = assigned_local(call);
        if (!local.empty() && kind != "tolist" && read_only_by_one_test(ctx, def, local)) return;
        const std::string what = kind == "item" || kind == "tolist" ? fmt::format("{}.{}()", tensor.text(), kind)
                                                                     : fmt::format("{}({})", kind, tensor.text());
        std::string reason = scalar_read_reason(kind);
        if (!local.empty()) {
            const auto uses = feeds(def, local);
            if (!uses.empty()) {
                reason += fmt::format("; `{}` feeds {}: data-dependent shapes, not a predicate a select could "
                                      "choose with",
                                      local, fmt::join(uses, ", "));
            } else {
                reason += "; the value is used as a Python value, not only as a test";
            }
        } else {
            reason += "; the value is used as a Python value, not only as a test";
        }
        // `.tolist()` of an integer tensor reads as `.item()` does; of any other dtype no setting helps.
        std::string help = setting_help(knowledge::DataBreak::ScalarRead);
        if (kind == "tolist") {
            help = "for an integer tensor, " + help + "; for any other dtype no setting removes it: the values kept "
                   "in a tensor would";
        }
        out.push_back(refused(call, what, "GB0124", std::move(reason), std::move(help)));
    }

    // True when `a`, a size argument in `def`, holds a tensor on every path that reaches it:
    // a parameter the function never rebinds that a caller passes a tensor (the others None
    // or what the analysis cannot tell), a local assigned once, from a tensor, or a call or
    // arithmetic whose value can only be a tensor.
    static bool tensor_size(const Context& ctx, const Node& def, const Node& a) {
        // A call, arithmetic or item computed there (`max(t.max() + 1, n)`, `ends[0]`): a tensor when it can be
        // nothing else, and every name in it that may hold a tensor holds one on every path
        // (as a size argument named alone must; `n + m` with `n` a tensor on one path only is not).
        if (!a.is("identifier")) {
            if (!(a.is("call") || a.is("binary_operator") || a.is("subscript")) ||
                !ctx.values.eval(ctx.file, a).only(analysis::kTensor)) {
                return false;
            }
            bool every = true;
            syntax::walk(a, [&](const Node& n) {
                if (!every || n.is("lambda")) return false;
                if (!n.is("identifier")) return true;
                const Node p = n.parent();
                if ((p.is("attribute") && p.field("attribute") == n) || (p.is("keyword_argument") && p.field("name") == n) ||
                    (p.is("call") && p.field("function") == n)) {
                    return true;
                }
                if (ctx.values.eval(ctx.file, n).tensor() && !tensor_size(ctx, def, n)) every = false;
                return true;
            });
            return every;
        }
        const analysis::Value v = ctx.values.eval(ctx.file, a);
        if (!v.tensor() || !v.only(analysis::kTensor | analysis::kNone | analysis::kUnknown)) return false;
        if (is_parameter(def, a.text())) return !assigned_in_body(def, a.text());
        int count = 0;
        Node value;
        syntax::walk(def.field("body"), [&](const Node& n) {
            if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
            if ((n.is("assignment") || n.is("augmented_assignment") || n.is("for_statement")) && n.field("left")) {
                each_bound_name(n.field("left"), [&](const Node& t) {
                    if (t.text() != a.text()) return;
                    ++count;
                    value = n.is("assignment") && n.field("left") == t ? n.field("right") : Node();
                });
            }
            return true;
        });
        if (count != 1 || !value || value.end() > a.begin()) return false;
        const analysis::Value rhs = ctx.values.eval(ctx.file, value);
        return rhs.tensor() && rhs.only(analysis::kTensor | analysis::kUnknown);
    }

    // True when every read of `name` in `def` is inside the data tests of one statement:
    // the predicate rules then rewrite the read with that statement (or refuse it, naming
    // the read). A read used anywhere else stays a graph break of its own, reported here.
    static bool read_only_by_one_test(const Context& ctx, const Node& def, const std::string& name) {
        // Where each name is read in `def`'s body, outside nested functions and classes:
        // offsets from its first byte, in order; remembered, as a function has many sites.
        using Reads = std::map<std::string, std::vector<std::uint32_t>>;
        thread_local analysis::FunctionMemo<Reads> memo;
        const Reads& reads = memo.get(def, [](const Node& fn) {
            Reads r;
            syntax::walk(fn.field("body"), [&](const Node& n) {
                if (n.is("function_definition") || n.is("class_definition")) return false;
                if (n.is("identifier") && is_read(n)) r[text(n)].push_back(n.begin() - fn.begin());
                return true;
            });
            return r;
        });
        const auto it = reads.find(name);
        if (it == reads.end()) return false;
        Node owner;
        for (const std::uint32_t at : it->second) {
            const std::uint32_t begin = def.begin() + at;
            const Node n = def.descendant(begin, begin + 1, true);
            Node stmt = n.parent();
            while (stmt && !stmt.is("if_statement") && !stmt.is("assert_statement") && !stmt.is("block")) {
                stmt = stmt.parent();
            }
            if (!in_data_test(ctx, n) || !stmt || stmt.is("block") || (owner && owner != stmt)) return false;
            owner = stmt;
        }
        return true;
    }

    // `for h, w in spatial_shapes:` over a tensor whose elements feed sizes or slices: each
    // element is a 0-d tensor, read into Python where it is used as a size (GB0124 / GB0033).
    static void check_tensor_loop(const Context& ctx, const Node& def, const Node& loop, std::vector<Site>& out) {
        Node iterable = loop.field("right");
        if (iterable.is("call") && iterable.field("function").is("identifier") &&
            (iterable.field("function").text() == "enumerate" || iterable.field("function").text() == "zip")) {
            const auto args = iterable.field("arguments").named_children();
            if (args.empty()) return;
            iterable = args.back();
        }
        if (!ctx.values.eval(ctx.file, iterable).only(analysis::kTensor)) return;
        std::vector<std::string> uses;
        syntax::walk(loop.field("left"), [&](const Node& t) {
            if (t.is("identifier")) {
                for (auto& u : feeds(def, std::string(t.text()))) {
                    // Sizes and slice bounds read the element; another loop over it need not.
                    if (u.starts_with("a loop")) continue;
                    if (std::find(uses.begin(), uses.end(), u) == uses.end()) uses.push_back(std::move(u));
                }
            }
            return true;
        });
        if (uses.empty()) return;
        out.push_back(refused(loop, fmt::format("for ... in {}", iterable.text()), "GB0124",
                              fmt::format("a loop over a tensor whose elements feed {}: each is read out of the "
                                          "tensor into Python there (data-dependent shapes)",
                                          fmt::join(uses, ", "))));
    }
};

}  // namespace

std::unique_ptr<Rule> make_data_dependent_shape_rule() { return std::make_unique<DataDependentShapeRule>(); }

}  // namespace graphmend::rules

// GM401: reads of tensor data that only Dynamo's evidence shows (see data_dependent_shape.hpp).
#include <fmt/format.h>

#include "data_dependent_shape.hpp"
#include "rules/support/site.hpp"

namespace graphmend::rules::data_dependent_shape {

namespace {

constexpr std::uint16_t kPython = analysis::kNumber | analysis::kBool | analysis::kNone | analysis::kStr;

bool literal_index(const Node& n) {
    const Node e = syntax::without_parens(n);
    if (e.is("integer") || e.is("string") || e.is("true") || e.is("false") || e.is("none")) return true;
    return e.is("unary_operator") && syntax::without_parens(e.field("argument")).is("integer");
}

}  // namespace

std::optional<std::pair<std::string, std::string>> dynamo_index_read(const Context& ctx, const Node& subscript) {
    if (!subscript.is("subscript") || !ctx.values.dynamo_data_operator(ctx.file, subscript)) return std::nullopt;
    // A store `x[i] = v` reads `i` as well: Tensor.__index__ either way.
    std::vector<Node> index;
    for (const Node& c : subscript.named_children()) {
        if (c.is("comment") || c == subscript.field("value")) continue;
        index.push_back(c);
    }
    if (index.size() != 1 || index[0].is("slice") || index[0].is("tuple") || literal_index(index[0])) {
        return std::nullopt;
    }
    // The annotation or the analysis may say `int` (DDIM's `timestep: int`, a NumPy scalar
    // that Dynamo holds as a tensor): Dynamo's record on this line is the evidence.
    if (ctx.values.eval(ctx.file, index[0]).only(analysis::kNumber | analysis::kBool) &&
        !index[0].is("identifier") && !index[0].is("attribute")) {
        return std::nullopt;
    }
    // capture_scalar_outputs does not help: the index is then an unbacked symbol that Dynamo
    // cannot specialize, a break all the same (measured, torch 2.12.1).
    const std::string i = one_line(index[0].text(), Blanks::Fold, 40);
    const std::string x = one_line(subscript.field("value").text(), Blanks::Fold, 40);
    return std::pair{
        fmt::format("`{}` indexes `{}` as a Python number: Dynamo reads the tensor's value there (GB0033, a "
                    "data-dependent operator, seen by `graphmend verify` on this line)",
                    i, x),
        fmt::format("no Dynamo setting removes it (capture_scalar_outputs leaves a symbol Dynamo cannot index "
                    "with); `{}.index_select(0, {}.reshape(1)).squeeze(0)` with `{}` a tensor stays in the graph, or "
                    "`{}` a Python int where it is made (measured, torch 2.12.1)",
                    x, i, i, i)};
}

std::optional<std::pair<std::string, std::string>> dynamo_builtin_compare(const Context& ctx, const Node& call) {
    if (!call.is("call")) return std::nullopt;
    const Node fn = call.field("function");
    if (!fn.is("identifier") || (fn.text() != "min" && fn.text() != "max")) return std::nullopt;
    if (ctx.source().index.find_import(std::string(fn.text())) != nullptr) return std::nullopt;
    if (!ctx.values.dynamo_data_operator(ctx.file, call)) return std::nullopt;
    const auto args = call.field("arguments").named_children();
    if (args.size() < 2) return std::nullopt;
    bool tensor_or_unknown = false;
    for (const Node& a : args) {
        if (a.is("keyword_argument") || a.is("list_splat") || a.is("dictionary_splat")) return std::nullopt;
        const analysis::Value v = ctx.values.eval(ctx.file, a);
        tensor_or_unknown = tensor_or_unknown || !v.only(kPython);
    }
    if (!tensor_or_unknown) return std::nullopt;
    return std::pair{fmt::format("builtin `{}` compares tensor values in Python: Dynamo reads them there (GB0033, "
                                 "a data-dependent operator, seen by `graphmend verify` on this line)",
                                 fn.text()),
                     fmt::format("`torch.clamp(X, {}=N)` in place of `{}(X, N)`, where a tensor result serves, stays "
                                 "in the graph; capture_scalar_outputs does not help (measured, torch 2.12.1)",
                                 fn.text() == "max" ? "min" : "max", fn.text())};
}

}  // namespace graphmend::rules::data_dependent_shape

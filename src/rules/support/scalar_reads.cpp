// Scalar reads behind data-dependent tests: see src/rules/support/scalar_reads.hpp.
#include "scalar_reads.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "graphmend/knowledge.hpp"
#include "graphmend/runtime_sources.hpp"
#include "tensor_test.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

bool inside_any(const Node& n, const std::vector<Node>& spans) {
    for (const Node& s : spans) {
        if (s.begin() <= n.begin() && n.end() <= s.end()) return true;
    }
    return false;
}

}  // namespace

std::optional<ScalarRead> scalar_read(const Context& ctx, const Node& call) {
    if (!call.is("call")) return std::nullopt;
    const Node fn = call.field("function");
    const auto args = call.field("arguments").named_children();
    ScalarRead read;
    if (fn.is("attribute") && (fn.field("attribute").text() == "item" || fn.field("attribute").text() == "tolist") &&
        args.empty()) {
        read = {std::string(fn.field("attribute").text()), fn.field("object")};
    } else if (fn.is("identifier") && (fn.text() == "float" || fn.text() == "int" || fn.text() == "bool") &&
               args.size() == 1 && !args[0].is("keyword_argument") && !args[0].is("list_splat") &&
               ctx.source().index.find_import(std::string(fn.text())) == nullptr) {
        read = {std::string(fn.text()), args[0]};
    } else {
        return std::nullopt;
    }
    // A value the analysis cannot tell (a library function's parameter) is a tensor where
    // Dynamo read a tensor's value on this line in the original run (verify's --data-read).
    const analysis::Value v = ctx.values.eval(ctx.file, read.tensor);
    const bool unknown = v.kinds == 0 || (v.kinds & analysis::kUnknown) != 0;
    if (!v.tensor() && !(unknown && ctx.values.dynamo_data_read(ctx.file, call))) return std::nullopt;
    return read;
}

ScalarReads scalar_reads(const Context& ctx, const Node& def, const std::vector<Node>& tests) {
    ScalarReads out;
    std::vector<std::string> names;
    for (const Node& t : tests) {
        for (auto& n : ctx.values.data_scalars(ctx.file, t)) {
            if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(std::move(n));
        }
    }
    for (const auto& name : names) {
        std::vector<Node> assignments;
        std::vector<Node> reads;
        syntax::walk(def.field("body"), [&](const Node& n) {
            if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
            if ((n.is("assignment") || n.is("augmented_assignment") || n.is("named_expression") ||
                 n.is("for_statement")) ) {
                const Node target = n.is("named_expression") ? n.field("name") : n.field("left");
                bool binds = false;
                syntax::walk(target, [&](const Node& t) {
                    if (t.is("identifier") && t.text() == name) binds = true;
                    return !t.is("attribute") && !t.is("subscript");
                });
                if (binds) assignments.push_back(n);
            }
            if (n.is("identifier") && n.text() == name && is_read(n)) reads.push_back(n);
            return true;
        });
        const std::string where = assignments.empty()
                                      ? std::string()
                                      : fmt::format(" at line {}", assignments[0].position().line);
        if (assignments.size() != 1 || !assignments[0].is("assignment") ||
            !assignments[0].field("left").is("identifier") || !assignments[0].parent().is("expression_statement")) {
            out.refused = fmt::format("the test reads `{}`, a Python value read out of tensor data{}: the graph "
                                      "breaks at that read (GB0124), which this rule cannot move",
                                      name, where);
            return out;
        }
        const Node right = assignments[0].field("right");
        // The reads in the value: `T.item()`, `float(T)`, `int(T)`, `bool(T)` with T a tensor
        // (`flag = mask[:, -1].sum().item() != n` too).
        std::vector<edits::Edit> found;
        syntax::walk(right, [&](const Node& n) {
            if (n.is("lambda")) return false;
            const auto read = scalar_read(ctx, n);
            if (!read || read->kind == "tolist") return true;
            found.push_back({n.begin(), n.end(),
                             fmt::format("{}(\"{}\", {})", runtime::name::scalar, read->kind, read->tensor.text())});
            return false;
        });
        if (found.empty()) {
            out.refused = fmt::format("the test reads `{}`, computed from tensor data{} (`{}`): the graph breaks "
                                      "there (GB0124), not at the test",
                                      name, where, right.text().substr(0, 60));
            return out;
        }
        // Traced, an int read is a float64 tensor (see _graphmend_scalar): no bitwise operators.
        auto bitwise_operand = [](const Node& n) {
            Node c = n;
            Node p = n.parent();
            while (p.is("parenthesized_expression")) {
                c = p;
                p = p.parent();
            }
            if (p.is("unary_operator") && p.field("operator").text() == "~") return true;
            if (!p.is("binary_operator") && !p.is("augmented_assignment")) return false;
            const std::string_view op = p.field("operator").text();
            return op == "&" || op == "|" || op == "^" || op == "<<" || op == ">>" || op == "&=" || op == "|=" ||
                   op == "^=" || op == "<<=" || op == ">>=";
        };
        std::vector<Node> uses = reads;
        syntax::walk(right, [&](const Node& n) {
            if (n.is("lambda")) return false;
            if (const auto read = scalar_read(ctx, n); read && read->kind != "tolist") uses.push_back(n);
            return true;
        });
        for (const Node& u : uses) {
            if (bitwise_operand(u)) {
                out.refused = fmt::format("`{}` is an operand of a bitwise operator at line {}: traced, the read of "
                                          "tensor data would stay a float64 tensor (it keeps Python's int and float "
                                          "arithmetic), which has none",
                                          name, u.position().line);
                return out;
            }
        }
        for (const Node& r : reads) {
            if (!inside_any(r, tests)) {
                out.refused = fmt::format("`{}` holds `{}`{} (a graph break, GB0124) and is also used at line {}, "
                                          "outside the test: it must stay a Python number there",
                                          name, right.text().substr(0, 60), where, r.position().line);
                return out;
            }
        }
        out.edits.insert(out.edits.end(), found.begin(), found.end());
        out.lines.push_back(fmt::format("line {}", assignments[0].position().line));
    }
    return out;
}

void with_scalar_reads(Site& site, const ScalarReads& reads) {
    if (!reads.refused.empty()) {
        site.fix.reset();
        site.reason = reads.refused;
        site.graph_break = "GB0124";
        return;
    }
    if (!site.fix || reads.edits.empty()) return;
    site.fix->edits.insert(site.fix->edits.end(), reads.edits.begin(), reads.edits.end());
    std::sort(site.fix->edits.begin(), site.fix->edits.end(),
              [](const edits::Edit& a, const edits::Edit& b) { return a.begin < b.begin; });
    site.graph_break += "+GB0124";
    site.detail += fmt::format("; the read of tensor data at {} stays a tensor when traced",
                               fmt::join(reads.lines, ", "));
}

std::string dynamic_shape_in_test(const Context& ctx, const syntax::Node& test) {
    std::string why;
    syntax::walk(test, [&](const syntax::Node& n) {
        if (!why.empty() || n.is("lambda")) return false;
        if (!n.is("call") || !n.field("function").is("attribute")) return true;
        const syntax::Node fn = n.field("function");
        if (!knowledge::dynamic_shape_op(fn.field("attribute").text())) return true;
        if (!ctx.project.external_name(ctx.file, fn).starts_with("torch.") &&
            !ctx.values.eval(ctx.file, fn.field("object")).tensor()) {
            return true;
        }
        why = fmt::format("the test calls `{}(...)`, whose output shape depends on the data: Dynamo breaks there "
                          "(GB0036, a dynamic-shape op, reported as GM401), and the test after it reads a Python "
                          "int, so rewriting the test removes no break",
                          fn.text());
        return false;
    });
    return why;
}

}  // namespace graphmend::rules

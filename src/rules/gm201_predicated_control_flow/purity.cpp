// GM201: which calls and expressions a branch may evaluate when the test does not pick it
// (see predicated_control_flow.hpp). What is known of torch's ops, modules and Python's builtins
// (pure, random, stateless, with an unsafe gradient, raising for values) is the knowledge
// layer's (src/knowledge/tensor_ops.cpp, modules.cpp, python.cpp, value_raising.cpp).
// The guarded index (index_guard_of, clamp_index, ...) is in guarded_index.cpp.
#include <algorithm>

#include "predicated_control_flow.hpp"

#include "graphmend/knowledge.hpp"
#include "rules/support/scalar_reads.hpp"
#include "rules/support/site.hpp"

namespace graphmend::rules::control_flow {

namespace {

// A number literal other than 0 (`2`, `15.0`, `-1`): a divisor that cannot be zero.
bool nonzero_number(const Node& n) {
    Node v = n;
    while (v.is("parenthesized_expression") && !v.named_children().empty()) v = v.named_children()[0];
    if (v.is("unary_operator")) v = v.field("argument");
    if (!v.is("integer") && !v.is("float")) return false;
    return v.text().find_first_not_of("0._xXoObBeE+-") != std::string_view::npos;
}

// The operand of a call of `op` that decides whether it raises: `method` when the call is
// `TENSOR.op(...)` (the receiver stands for the first argument of `torch.op(...)`).
Node raising_operand(const Node& call, const knowledge::ValueRaisingOp& op, bool method) {
    const int position = method ? op.position - 1 : op.position;
    if (position < 0) return call.field("function").field("object");
    return call_argument(call, static_cast<std::size_t>(position), op.keyword);
}

// A comparison, `~`, `&` or `|`: a boolean mask, which picks rows instead of naming them.
bool boolean_index(const Node& index) {
    const Node i = syntax::without_parens(index);
    if (i.is("comparison_operator")) return true;
    if (i.is("unary_operator")) return i.field("operator").text() == "~";
    return i.is("binary_operator") && (i.field("operator").text() == "&" || i.field("operator").text() == "|");
}

bool passes_keyword(const Node& call, std::string_view name) {
    for (const Node& a : call.field("arguments").named_children()) {
        if (a.is("keyword_argument") && a.field("name").text() == name) return true;
    }
    return false;
}

}  // namespace

std::vector<std::string> parameter_names(const Node& function) {
    std::vector<std::string> out;
    for (const Node& p : function.field("parameters").named_children()) {
        if (p.is("identifier")) {
            out.push_back(text(p));
        } else if (p.is("typed_parameter")) {
            out.push_back(!p.named_children().empty() && p.named_children()[0].is("identifier") ? syntax::text(p.named_children()[0]) : "*");
        } else if (p.is("default_parameter") || p.is("typed_default_parameter")) {
            out.push_back(text(p.field("name")));
        } else {
            out.push_back("*");  // *args, **kwargs, `*`, `/`: no name a call binds by position
        }
    }
    return out;
}

std::string rebound_before(const Node& function, const std::string& name, const Node& at) {
    std::string why;
    syntax::walk(function.field("body"), [&](const Node& n) {
        if (!why.empty() || n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (n.is("identifier") && n.text() == name && !analysis::is_read(n) && !n.parent().is("keyword_argument") &&
            !n.parent().is("attribute")) {
            bool in_loop_around = false;
            for (Node p = at.parent(); p && !(p == function); p = p.parent()) {
                if ((p.is("for_statement") || p.is("while_statement")) && p.begin() <= n.begin() && n.end() <= p.end()) {
                    in_loop_around = true;
                }
            }
            if (n.begin() < at.begin() || in_loop_around) {
                why = fmt::format("`{}` is rebound before `{}` changes it in place", name,
                                  one_line(at.text(), Blanks::Fold, 40));
            }
        }
        return true;
    });
    return why;
}

std::string Checker::value_raise(const Node& n, std::size_t file) {
    const auto tensor = [&](const Node& e) { return e && ctx.values.eval(file, e).tensor(); };
    const auto may_be_tensor = [&](const Node& e) {
        if (!e) return false;
        const analysis::Value v = ctx.values.eval(file, e);
        return v.kinds == 0 || v.tensor() || (v.kinds & analysis::kUnknown) != 0;
    };
    // An index that reads no value a test could make out of range: `...`, a literal, `None`, a
    // `slice(...)`, the variable of a loop around it over `range(...)` (a Python int).
    const auto fixed_index = [](const Node& i) {
        if (i.is("ellipsis") || i.is("integer") || i.is("none") || i.is("slice")) return true;
        if (i.is("unary_operator")) return i.field("argument").is("integer");
        if (i.is("identifier")) {
            for (Node p = i.parent(); p && !p.is("function_definition"); p = p.parent()) {
                if (p.is("for_statement") && p.field("left").text() == i.text() && p.field("right").is("call") &&
                    p.field("right").field("function").text() == "range") {
                    return true;
                }
            }
        }
        return i.is("call") && i.field("function").text() == "slice";
    };
    const auto why = [](const Node& site, const Node& operand, const knowledge::ValueRaisingOp& op) {
        return fmt::format("a select would also run `{}` on the path the test does not take, and it raises for "
                           "some values of `{}` ({}); the original runs it only on its own path",
                           one_line(site.text(), Blanks::Fold, 60), one_line(operand.text(), Blanks::Fold, 40),
                           op.raises);
    };
    if (n.is("binary_operator")) {
        const auto* op = knowledge::value_raising_op(n.field("operator").text());
        const Node divisor = n.field("right");
        if (op && (tensor(n.field("left")) || tensor(divisor)) && !nonzero_number(divisor)) {
            return why(n, divisor, *op);
        }
        return "";
    }
    if (n.is("subscript")) {
        for (Node index = n.field("subscript"); index; index = index.next_named_sibling()) {
            if (index.is("comment") || boolean_index(index)) continue;  // a shape, not a value, breaks there
            // The guarded index is clamped even where the analysis does not show it a tensor (a
            // library's `timestep: int` that the user's script passes a 0-d tensor): the test
            // `I >= 0` reads tensor data (a site), so I is one; the runtime indexes as written for
            // anything else, and keeps the `if` where X is no tensor (selectable).
            if (!index.is("slice") && clamp_index(n, index, file)) continue;
            // An index the analysis cannot tell (no value seen: a library's attribute set outside
            // __init__, an unannotated parameter) may be a tensor as well: `X[I + 1]` reads past
            // the end on the path the test does not take (DDPM's previous_timestep).
            if (!fixed_index(index) && may_be_tensor(index) && may_be_tensor(n.field("value"))) {
                static constexpr knowledge::ValueRaisingOp kIndexing{
                    "[]", knowledge::RaisingOperand::Index, 1, "", "", "IndexError: index out of bounds",
                    knowledge::kOperator};
                return why(n, index, kIndexing);
            }
        }
        return "";
    }
    if (!n.is("call")) return "";
    const Node fn = n.field("function");
    if (fn.is("attribute") && fn.field("object").text() == "self") {
        const auto it = submodules.find(std::string(fn.field("attribute").text()));
        const auto* op = it == submodules.end() ? nullptr : knowledge::value_raising_module(it->second);
        const Node input = op ? raising_operand(n, *op, false) : Node();
        return input && tensor(input) ? why(n, input, *op) : "";
    }
    const Node name = fn.is("attribute") ? fn.field("attribute") : fn;
    const auto* op = knowledge::value_raising_op(name.text());
    if (!op || !name.is("identifier") || (!op->only_with.empty() && !passes_keyword(n, op->only_with))) return "";
    const bool method = fn.is("attribute") && tensor(fn.field("object"));
    if (!method && !ctx.project.external_name(file, fn).starts_with("torch")) return "";
    const Node operand = raising_operand(n, *op, method);
    if (!operand || (op->operand == knowledge::RaisingOperand::Divisor && nonzero_number(operand))) return "";
    if (op->operand != knowledge::RaisingOperand::Divisor && !tensor(operand)) return "";
    return why(n, operand, *op);
}

// graphmend's own predicated runtime: pure when what its lambdas return is (a branch that
// holds a select rewritten by an earlier pass, or a tensor `and`/`or`).
const std::set<std::string_view> kRuntimeHelpers{runtime::name::if_,     runtime::name::and_,
                                                 runtime::name::or_,     runtime::name::not_,
                                                 runtime::name::scalar, runtime::name::equal,
                                                 runtime::name::copy,   runtime::name::index,
                                                 runtime::name::indexable};

std::string Checker::branch_impurity(const Node& expr) {
    if (auto why = impurity(expr); !why.empty()) return why;
    std::string why;
    syntax::walk(expr, [&](const Node& n) {
        if (!why.empty() || n.is("lambda")) return false;
        if (scalar_read(ctx, n)) {
            why = fmt::format("the branch reads tensor data into Python (`{}`), a graph break of its own that a "
                              "select would run on both paths",
                              n.text());
        }
        if (n.is("subscript") && n.field("subscript")) {
            Node index = n.field("subscript");
            while (index.is("parenthesized_expression") && !index.named_children().empty()) {
                index = index.named_children()[0];
            }
            const bool mask = index.is("comparison_operator") ||
                              (index.is("unary_operator") && index.field("operator").text() == "~") ||
                              (index.is("identifier") && ctx.values.eval(ctx.file, index).tensor());
            const bool clamp = std::any_of(clamped.begin(), clamped.end(), [&](const Node& c) { return c.begin() == n.begin(); });
            if (mask && !clamp && ctx.values.eval(ctx.file, n.field("value")).tensor() &&
                ctx.values.eval(ctx.file, index).tensor()) {
                why = fmt::format("the branch indexes with a tensor (`{}`): a boolean mask makes a data-dependent "
                                  "shape, a graph break that a select would run on both paths",
                                  n.text());
            }
        }
        return why.empty();
    });
    return why;
}

std::string Checker::impurity(const Node& expr, bool always_run) {
    std::string why;
    syntax::walk(expr, [&](const Node& n) {
        if (!why.empty()) return false;
        if (!always_run) {
            why = value_raise(n, ctx.file);
            if (!why.empty()) return false;
        }
        if (n.is("call") && n.field("function").is("identifier") &&
            kRuntimeHelpers.contains(n.field("function").text())) {
            for (const Node& a : n.field("arguments").named_children()) {
                if (!why.empty()) break;
                if (a.is("keyword_argument")) {
                    const Node v = a.field("value");
                    if (!v.is("lambda")) why = impurity(v);  // only=lambda: (...) just reads names
                } else if (a.is("lambda")) {
                    why = impurity(a.field("body"));
                } else {
                    why = impurity(a);
                }
            }
            return false;
        }
        // An earlier pass's binding of a step of a select (`_graphmend_slope := ...` in its
        // lambda): the binding moves with the call, and its value is checked as any other.
        if (n.is("named_expression") && n.field("name").text().starts_with("_graphmend_")) return true;
        if (n.is("lambda") || n.is("named_expression") || n.is("yield") || n.is("await")) {
            why = fmt::format("{} in a branch", construct_name(n));
            return false;
        }
        if (n.is("binary_operator")) {
            const auto op = n.field("operator").text();
            if (op == "/" || op == "//" || op == "%" || op == "**") grad_unsafe = true;
        }
        if (n.is("call")) {
            why = call_impurity(n);
            return why.empty();
        }
        return true;
    });
    return why;
}

std::string Checker::function_impurity(const analysis::FunctionRef& ref, int depth, std::set<std::string>* mutates) {
    if (depth > 3) return "calls nested too deep to check";
    const Node body = ref.node.field("body");
    const std::string owner = enclosing_class(ref.node);
    std::string why;
    // `P.OP_(...)` or `P[...] = ...` on a parameter P: with `mutates`, recorded where the
    // function has not rebound P before (or in a loop around) the change.
    const std::vector<std::string> params = parameter_names(ref.node);
    auto changes_parameter = [&](const Node& target, const Node& at) {
        const Node t = syntax::without_parens(target);
        if (!mutates || !t.is("identifier") || std::find(params.begin(), params.end(), text(t)) == params.end()) {
            return false;
        }
        if (auto w = rebound_before(ref.node, text(t), at); !w.empty()) {
            why = w;
            return true;
        }
        mutates->insert(text(t));
        return true;
    };
    syntax::walk(body, [&](const Node& n) {
        if (!why.empty()) return false;
        if (n.is("call") && n.field("function").is("attribute") &&
            knowledge::in_place(n.field("function").field("attribute").text()) &&
            !knowledge::keeps_argument(n.field("function").field("attribute").text()) &&
            !knowledge::random_op(n.field("function").field("attribute").text()) &&
            changes_parameter(n.field("function").field("object"), n)) {
            return why.empty();  // its arguments are checked as any expression
        }
        if (n.is("assignment") && n.field("left").is("subscript") && changes_parameter(n.field("left").field("value"), n)) {
            return why.empty();
        }
        if (!why.empty()) return false;
        if (n.is("function_definition") || n.is("class_definition") || n.is("global_statement") ||
            n.is("nonlocal_statement") || n.is("delete_statement") || n.is("yield") || n.is("await") ||
            n.is("raise_statement") || n.is("try_statement") || n.is("with_statement")) {
            why = construct_name(n);
            return false;
        }
        if ((n.is("assignment") || n.is("augmented_assignment")) && !n.field("left").is("identifier") &&
            !n.field("left").is("pattern_list") && !n.field("left").is("tuple_pattern")) {
            why = fmt::format("it stores into `{}`", n.field("left").text());
            return false;
        }
        why = value_raise(n, ref.file);
        if (!why.empty()) return false;
        if (n.is("call")) {
            const Node fn = n.field("function");
            if (auto callee = ctx.project.callee(ref.file, n, owner)) {
                why = function_impurity(*callee, depth + 1);  // changes of its parameters: impure here
                return why.empty();
            }
            if (fn.is("attribute") && fn.field("object").text() == "self") {
                why = fmt::format("it calls {}()", fn.text());
                return false;
            }
            const int saved = calls;
            why = call_impurity(n, false);
            calls = saved;
            return why.empty();
        }
        return true;
    });
    return why;
}

std::string Checker::enclosing_class(const Node& fn) {
    for (Node p = fn.parent(); p; p = p.parent()) {
        if (p.is("class_definition")) return text(p.field("name"));
        if (p.is("function_definition")) break;
    }
    return "";
}

std::string Checker::clone_arguments(const Node& call, const analysis::FunctionRef& callee,
                                     const std::set<std::string>& mutated) {
    const std::string fn(call.field("function").text());
    std::vector<std::string> params = parameter_names(callee.node);
    // A method called on an object: its first parameter is the object.
    if (call.field("function").is("attribute") && !params.empty() && (params[0] == "self" || params[0] == "cls")) {
        params.erase(params.begin());
    }
    std::vector<Node> args;
    for (const Node& a : call.field("arguments").named_children()) {
        if (a.is("list_splat") || a.is("dictionary_splat")) {
            return fmt::format("calls {}(), which changes an argument in place, with `*` or `**` arguments", fn);
        }
        if (!a.is("comment")) args.push_back(a);
    }
    for (const std::string& p : mutated) {
        Node arg;
        const auto at = std::find(params.begin(), params.end(), p);
        for (std::size_t i = 0; i < args.size() && !arg; ++i) {
            if (args[i].is("keyword_argument") ? args[i].field("name").text() == p
                                               : at != params.end() && i == static_cast<std::size_t>(at - params.begin())) {
                arg = args[i].is("keyword_argument") ? args[i].field("value") : args[i];
            }
        }
        if (!arg) {
            return fmt::format("calls {}(), which changes its parameter `{}` in place, left to its default (an "
                               "object the function keeps)",
                               fn, p);
        }
        const Node a = syntax::without_parens(arg);
        if (a.is("identifier") && text(a) == clone_target) {
            pending_clones.insert(a.begin());
            changed_in_place[clone_target].insert(a.begin());
            continue;
        }
        if (!a.is("identifier") && fresh_value(a).empty()) continue;  // a new tensor nothing else holds
        return fmt::format("calls {}(), which changes its argument `{}` in place, and the statement does not "
                           "rebind `{}` to the result: the change would be seen through it",
                           fn, a.text(), a.text());
    }
    return "";
}

std::optional<analysis::FunctionRef> Checker::local_function(const Node& call, std::string& why) const {
    const Node fn = call.field("function");
    if (!fn.is("identifier") || !site_def || !site_stmt) return std::nullopt;
    const std::string name = text(fn);
    Node found;
    int bindings = 0;
    syntax::walk(site_def.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition")) {
            if (text(n.field("name")) == name) {
                found = n;
                ++bindings;
            }
            return false;
        }
        if (n.is("identifier") && text(n) == name && !analysis::is_read(n) && !n.parent().is("keyword_argument")) ++bindings;
        return true;
    });
    if (!found || bindings != 1 || !found.parent().parent().is("function_definition") ||
        found.begin() > site_stmt.begin()) {
        return std::nullopt;
    }
    // A name the branches assign is read by the closure from the enclosing function, where the
    // lambdas bind their own (`_graphmend_NAME`): it would see the value before the `if`.
    std::set<std::string> assigned;
    syntax::walk(site_stmt, [&](const Node& n) {
        if (n.is("identifier") && !analysis::is_read(n) && !n.parent().is("keyword_argument")) assigned.insert(text(n));
        return !n.is("lambda");
    });
    syntax::walk(found.field("body"), [&](const Node& n) {
        if (why.empty() && n.is("identifier") && analysis::is_read(n) && assigned.contains(text(n))) {
            why = fmt::format("calls {}(), which reads `{}` of the function around it, and a branch assigns `{}`", name,
                              n.text(), n.text());
        }
        return why.empty();
    });
    return analysis::FunctionRef{ctx.file, found};
}

std::string Checker::call_impurity(const Node& call, bool follow) {
    const Node fn = call.field("function");
    ++calls;
    if (follow) {
        Node def = analysis::enclosing_function(call);
        while (def && !def.is("function_definition")) def = analysis::enclosing_function(def);
        if (def) {
            std::string why;
            auto callee = ctx.project.callee(ctx.file, call, enclosing_class(def));
            // A parameter every call site fills with one known function (a lambda too): that one.
            if (!callee && fn.is("identifier") && analysis::enclosing_function(call) == def) {
                const auto* passed = ctx.project.passed_callable(ctx.file, def.begin(), text(fn));
                if (const analysis::FunctionRef* only = passed != nullptr ? passed->only() : nullptr) callee = *only;
            }
            if (!callee) callee = local_function(call, why);
            if (!why.empty()) return why;
            if (callee) {
                std::set<std::string> mutated;
                if (auto why = function_impurity(*callee, 0, clone_target.empty() ? nullptr : &mutated);
                    !why.empty()) {
                    return fmt::format("calls {}(), which is not pure: {}", fn.text(), why);
                }
                return mutated.empty() ? "" : clone_arguments(call, *callee, mutated);
            }
        }
    }
    if (fn.is("identifier")) {
        if (knowledge::pure_builtin(fn.text())) return "";
        return fmt::format("calls {}(), which is not known to be pure", fn.text());
    }
    if (!fn.is("attribute")) return fmt::format("calls {}", fn.text());
    const std::string_view name = fn.field("attribute").text();
    const Node obj = fn.field("object");
    if (knowledge::grad_unsafe(name)) grad_unsafe = true;
    if (obj.text() == "self") {
        const auto it = submodules.find(std::string(name));
        if (it != submodules.end() && knowledge::stateless_module(it->second)) {
            calls_submodule = true;
            return "";
        }
        if (it != submodules.end()) {
            return fmt::format("calls self.{} (nn.{}), which may update state or draw random numbers", name,
                               it->second);
        }
        return fmt::format("calls self.{}(), code that may have effects", name);
    }
    if (name.ends_with("_")) return fmt::format("in-place {}() on a tensor that outlives the branch", name);
    if (knowledge::impure_torch(name)) return fmt::format("{}() draws random numbers", name);
    if (knowledge::pure_op(name)) return "";
    return fmt::format("calls {}(), which is not known to be pure", fn.text());
}

}  // namespace graphmend::rules::control_flow

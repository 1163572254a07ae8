// Rule GM201 predicated-control-flow. User doc: docs/rules/predicated-control-flow.md.
//
// What it does: finds `if` / `elif` / `else` statements and conditional expressions in
// code that runs under torch.compile whose test reads tensor values
// (`if h.abs().max() > limit:`, `if torch.isinf(h).any() or torch.isnan(h).any():`,
// `if loss.item() > 1.0:`) and turns each into one call of graphmend's runtime
// (src/runtime/predicated_control_flow.py):
//
//     NAMES = _graphmend_if(PRED, lambda: TRUE_VALUES, lambda: FALSE_VALUES, grad_safe=...)
//     return _graphmend_if(PRED, lambda: TRUE_RESULT, lambda: FALSE_RESULT, grad_safe=...)
//
// Each branch becomes a lambda returning the values of the names live after the `if`
// (a branch that does not assign a name returns its prior value), or the value it
// returns; `if TEST: return A` followed by the rest of the function takes the rest as
// the false branch. Tensor `and` / `or` / `not`, `.item()` / `float()` / `int()` /
// `bool()` and `torch.equal` in the test become _graphmend_and/_or/_not/_scalar/_equal,
// which keep Python's rules when an operand is not a tensor, so a static part
// (`h.dtype == torch.float16 and ...`) is still settled by Dynamo at trace time.
// Messages under the test become _graphmend_when (deferred with the test), and a
// counter on a buffer (`self.n += 1`) becomes _graphmend_update (an in-place add of a
// where). Branches that call a submodule or make 8+ calls are marked costly=True, which
// the runtime turns into torch.cond.
//
// Why: Dynamo cannot trace Python control flow on a tensor value: GB0170 (torch 2.12,
// "Data-dependent branching"), and GB0124 for `.item()`.
//
// State form (unsafe fix): an if/else whose branches rebind the same buffer
// (`self.register_buffer("NAME", V)`), maybe after filling a cache (`if not hasattr(self,
// "A"): self.A[, _] = MAKE`) or converting an attribute to where it already is
// (`self.A = self.A.to(device)`), becomes _graphmend_if_state(TEST, self, lambda self:
// (...), lambda self: (...)): traced, the buffer is rebound to a torch.where of the two
// values (an equal tensor, not the object the branch named) and a missing cache is computed
// but not stored, so its maker is taken to have no effects. transformers' longrope update
// (modeling_rope_utils.py:50, Phi-3) is the case it was made for.
//
// Fix safety: safe, except the state form. Eagerly, and whenever the test is not a tensor, exactly one branch
// runs, as before. Traced with a one-element tensor test, both branches run and
// torch.where selects; the runtime keeps the original `if` (and its graph break) when
// the branch values differ in kind, shape, dtype or device, when a non-tensor value
// differs between branches, and, for branches that can produce inf/NaN (division, log,
// sqrt, pow, exp, std, ...), when the values require grad. Refused, with the reason:
// statements other than assignments to names (tuple unpacking included), `pass`, a
// final `return`, deferrable messages and buffer counters; other stores into attributes
// or items and in-place updates (module state); calls of code not known to be pure (only
// torch functions and tensor methods without a trailing `_` and not random, and stateless
// torch.nn submodules); a live name with no value before the `if`, or a read of a local
// that may be unbound; a branch setting a Python constant a select could not choose;
// nested ifs in a branch.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>

#include "graphmend/check_call.hpp"
#include "graphmend/deferred_call.hpp"
#include "graphmend/liveness.hpp"
#include "graphmend/scalar_reads.hpp"
#include "graphmend/tensor_test.hpp"
#include "graphmend/rule.hpp"

namespace graphmend::rules {

using analysis::maybe_unbound;
using analysis::Scope;
using syntax::Node;

namespace {

const RuleInfo kInfo{"GM201", "predicated-control-flow",
                     "data-dependent if/elif/else under torch.compile, selected with torch.where"};

// Tensor methods (and torch functions) known to be pure: no state, no I/O, no randomness.
const std::set<std::string_view> kPureMethods{
    "abs", "absolute", "add", "addmm", "all", "amax", "amin", "any", "argmax", "argmin", "bfloat16", "bmm",
    "bool", "ceil", "chunk", "clamp", "clamp_max", "clamp_min", "clip", "clone", "contiguous", "cos",
    "cumsum", "detach", "dim", "div", "double", "einsum", "eq", "exp", "expand", "expand_as", "expm1",
    "flatten", "float", "floor", "gather", "ge", "gelu", "gt", "half", "index_select", "int", "isfinite",
    "isinf", "isnan", "le", "log", "log1p", "log2", "log_softmax", "logical_and", "logical_not",
    "logical_or", "long", "lt", "masked_fill", "matmul", "max", "maximum", "mean", "min", "minimum", "mm",
    "mul", "narrow", "ne", "neg", "new_full", "new_ones", "new_zeros", "norm", "numel", "permute", "pow",
    "prod", "reciprocal", "relu", "repeat", "reshape", "reshape_as", "round", "rsqrt", "select", "sigmoid",
    "sign", "silu", "sin", "size", "softmax", "split", "sqrt", "square", "squeeze", "std", "sub", "sum",
    "t", "tanh", "to", "transpose", "tril", "triu", "true_divide", "type_as", "unflatten", "unsqueeze",
    "var", "view", "view_as", "where", "zeros_like", "ones_like", "full_like", "finfo", "iinfo", "tensor", "item",
    "as_tensor", "zeros", "ones", "full", "arange", "cat", "stack", "isclose", "clamp_", "nan_to_num",
    "linear", "layer_norm", "rms_norm", "group_norm", "embedding", "conv1d", "conv2d", "conv3d",
    "softplus", "leaky_relu", "elu", "mish", "hardtanh", "pad", "normalize", "cosine_similarity"};

// torch functions that draw random numbers or touch global state.
const std::set<std::string_view> kImpureTorch{
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli",
    "multinomial", "normal", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "feature_alpha_dropout", "rrelu", "manual_seed", "seed", "save", "load", "empty", "empty_like"};

// Python builtins that are pure on the values a model passes them.
const std::set<std::string_view> kPureBuiltins{"min", "max", "abs", "len", "float", "int", "bool",
                                               "tuple", "round", "isinstance", "getattr", "any", "all", "sum"};

// torch.nn modules whose forward keeps no state and draws no random numbers.
const std::set<std::string_view> kStatelessModules{
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "LayerNorm", "GroupNorm", "RMSNorm", "Embedding", "Identity", "ReLU", "GELU",
    "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Mish", "LeakyReLU", "ELU", "Softplus",
    "Hardtanh", "Flatten", "Unflatten"};

// Operations whose gradient can be inf/NaN where their value is finite or unused.
const std::set<std::string_view> kGradUnsafe{
    "div", "true_divide", "reciprocal", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "pow", "exp",
    "expm1", "std", "var", "norm", "acos", "asin", "atanh", "tan", "lgamma", "digamma", "atan2", "normalize"};

std::string text(const Node& n) { return std::string(n.text()); }

// The identifier a plain string literal spells ("inv_freq" -> inv_freq), or "".
std::string plain_name(const Node& n) {
    if (!n.is("string")) return "";
    const std::string t = text(n);
    if (t.size() < 3 || (t.front() != '"' && t.front() != '\'') || t.back() != t.front()) return "";
    const std::string inner = t.substr(1, t.size() - 2);
    if (inner.empty() || std::isdigit(static_cast<unsigned char>(inner[0]))) return "";
    for (char c : inner) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return "";
    }
    return inner;
}

bool is_literal(const Node& n) {
    return n.is("true") || n.is("false") || n.is("none") || n.is("integer") || n.is("float") || n.is("string");
}

// How two branch values provably differ in kind, or "": None against a tensor, or tuples
// of different lengths (element by element).
std::string kind_clash(const analysis::Value& a, const analysis::Value& b, const std::string& where = "") {
    using analysis::kNone;
    using analysis::kTensor;
    if ((a.only(kNone) && b.tensor()) || (b.only(kNone) && a.tensor())) {
        return fmt::format("None against a tensor{}", where);
    }
    if (!a.items.empty() && !b.items.empty()) {
        if (a.items.size() != b.items.size()) return fmt::format("tuples of {} and {} values{}", a.items.size(), b.items.size(), where);
        for (std::size_t i = 0; i < a.items.size(); ++i) {
            if (auto c = kind_clash(a.items[i], b.items[i], fmt::format(" at position {}", i + 1)); !c.empty()) return c;
        }
    }
    return "";
}

// --- branches -----------------------------------------------------------------------------

// What a branch reads that may carry gradients: locals and parameters read before the
// branch assigns them, and `self.NAME` (parameters, buffers, submodules).
struct Reads {
    std::map<std::string, Node> roots;  // name or "self.NAME" -> a node that reads it
    std::set<std::string> assigned;
};

void collect_reads(const Node& expr, const std::set<std::string>& locals, Reads& r) {
    syntax::walk(expr, [&](const Node& n) {
        if (n.is("attribute") && n.field("object").is("identifier") && n.field("object").text() == "self") {
            r.roots.emplace(std::string(n.text()), n);
            return false;
        }
        if (n.is("identifier") && is_read(n)) {
            const std::string name(n.text());
            if (locals.contains(name) && !r.assigned.contains(name) && name != "self") r.roots.emplace(name, n);
        }
        return true;
    });
}

struct Statement {
    // Rebind, SetAttr and Cache are module state (the state form, _graphmend_if_state):
    // `self.register_buffer("NAME", V, ...)`, `self.NAME = self.NAME.to(...)` and
    // `if not hasattr(self, "NAME"): self.NAME[, _] = MAKE`; `raw` is the expression
    // the branch lambda evaluates for it.
    // Check: `if TEST: raise E(...)` inside the branch; `raw` is its _graphmend_check call
    // with kGate where the branch's gate goes. An Assign with `copy` set is
    // `NAME.copy_(SRC)` on a fresh local (`value` is the call).
    enum Kind { Assign, Return, Effect, Update, Rebind, SetAttr, Cache, Check } kind = Assign;
    std::string name{};  // Assign; the buffer or attribute of Rebind / SetAttr / Cache
    Node value{};        // may be invalid for a bare `return`
    std::string effect{};  // Effect: the arguments of _graphmend_when after the test
    std::string raw{};     // Assign: a value already written in terms of lambda locals
                         // Update: the operator, "+=" or "-="
    bool copy = false;
};

// Where a branch's gate goes in a Check's test.
constexpr std::string_view kGate = "\x01";

struct Branch {
    Node test;  // invalid for `else`
    std::vector<Statement> body;
    bool returns = false;
    std::string gate{};  // with a Check: the test under which this branch runs
};

// `NAME` is a fresh local that `stmt` only writes with `NAME.copy_(...)`: its one
// assignment, before `stmt`, makes a new tensor (zeros_like, new_zeros, clone, ...), no
// statement between them reads it (no alias can exist), and `stmt` reads it only as the
// receiver of copy_. Then `NAME.copy_(SRC)` can become `NAME = copy of NAME with SRC`.
bool fresh_local(const Node& def, const Node& stmt, const std::string& name) {
    static const std::set<std::string_view> kFactories{
        "zeros_like", "ones_like", "empty_like", "full_like", "zeros", "ones", "empty", "full",
        "new_zeros", "new_ones", "new_empty", "new_full", "clone"};
    std::vector<Node> assignments;
    bool ok = true;
    syntax::walk(def.field("body"), [&](const Node& n) {
        if (!ok || n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (n.is("assignment") || n.is("augmented_assignment") || n.is("named_expression") || n.is("for_statement") ||
            n.is("with_item")) {
            syntax::walk(n.is("named_expression") ? n.field("name") : n.is("with_item") ? n : n.field("left"),
                         [&](const Node& t) {
                             if (t.is("identifier") && t.text() == name && !(t.parent().is("attribute"))) {
                                 assignments.push_back(n);
                             }
                             return !t.is("attribute") && !t.is("subscript");
                         });
        }
        if (n.is("identifier") && n.text() == name && is_read(n)) {
            const bool inside = stmt.begin() <= n.begin() && n.end() <= stmt.end();
            if (inside) {
                const Node attr = n.parent();
                ok = attr.is("attribute") && attr.field("object") == n && attr.field("attribute").text() == "copy_" &&
                     attr.parent().is("call");
            } else if (!assignments.empty() && n.begin() > assignments[0].end() && n.begin() < stmt.begin()) {
                ok = false;
            }
        }
        return true;
    });
    if (!ok || assignments.size() != 1 || !assignments[0].is("assignment") ||
        !assignments[0].field("left").is("identifier") || assignments[0].end() > stmt.begin()) {
        return false;
    }
    const Node right = assignments[0].field("right");
    if (!right || !right.is("call")) return false;
    const Node fn = right.field("function");
    return fn.is("attribute") && kFactories.contains(fn.field("attribute").text());
}

struct Checker {
    const Context& ctx;
    std::map<std::string, std::string> submodules;  // self.NAME -> torch.nn class name
    std::set<std::string> buffers;                   // self.register_buffer("NAME", ...)
    Node site_def{};   // the function, and the statement being rewritten (for fresh locals)
    Node site_stmt{};
    bool grad_unsafe = false;
    int unpacks = 0;
    int calls = 0;                // calls in the branches: with a submodule call, their cost
    bool calls_submodule = false;
    std::vector<std::string> assumed_pure{};  // self.NAME(...) calls making a cached value
    std::vector<std::string> dead_targets{};  // other targets of a cache's unpacking

    [[nodiscard]] static bool is_state(const Statement& s) {
        return s.kind == Statement::Rebind || s.kind == Statement::SetAttr || s.kind == Statement::Cache;
    }

    // `if not hasattr(self, "NAME"): self.NAME = MAKE` or `self.NAME, other = MAKE`: a
    // cache filled once. Sets `why` when the statement has that shape but cannot be taken.
    std::optional<Statement> cache_statement(const Node& stmt, std::string& why) {
        const Node test = stmt.field("condition");
        if (!test.is("not_operator")) return std::nullopt;
        const Node call = test.field("argument");
        if (!call.is("call") || call.field("function").text() != "hasattr") return std::nullopt;
        const auto args = call.field("arguments").named_children();
        if (args.size() != 2 || args[0].text() != "self") return std::nullopt;
        const std::string name = plain_name(args[1]);
        if (name.empty() || stmt.field("alternative")) return std::nullopt;
        std::vector<Node> body;
        for (const Node& c : stmt.field("consequence").named_children()) {
            if (!c.is("comment")) body.push_back(c);
        }
        if (body.size() != 1 || !body[0].is("expression_statement") || body[0].named_children().size() != 1 ||
            !body[0].named_children()[0].is("assignment")) {
            why = fmt::format("the cache `if not hasattr(self, \"{}\")` does more than one assignment", name);
            return Statement{};
        }
        const Node e = body[0].named_children()[0];
        const Node left = e.field("left");
        const Node right = e.field("right");
        const std::string target = "self." + name;
        int count = 0;
        int index = -1;
        if (left.is("attribute") && left.text() == target) {
            index = 0;
        } else if (left.is("pattern_list") || left.is("tuple_pattern")) {
            for (const Node& t : left.named_children()) {
                if (t.text() == target && index < 0) {
                    index = count;
                } else if (t.is("identifier")) {
                    dead_targets.push_back(text(t));
                } else {
                    index = -2;
                }
                ++count;
            }
        }
        if (index < 0 || !right || right.is("assignment")) {
            why = fmt::format("the cache `if not hasattr(self, \"{}\")` assigns `{}`", name, left.text());
            return Statement{};
        }
        // The value may call methods the module holds (self.NAME(...)): taken as pure,
        // which makes the fix unsafe; anything else must be known pure.
        syntax::walk(right, [&](const Node& n) {
            if (!why.empty()) return false;
            if (n.is("call")) {
                const Node fn = n.field("function");
                if (fn.is("attribute") && fn.field("object").text() == "self" && call_impurity(n).size() > 0 &&
                    !submodules.contains(text(fn.field("attribute")))) {
                    assumed_pure.push_back(fmt::format("{}(...)", fn.text()));
                    return true;
                }
                why = call_impurity(n);
                return why.empty();
            }
            if (n.is("lambda") || n.is("named_expression") || n.is("yield") || n.is("await")) {
                why = fmt::format("`{}` in a branch", n.type());
                return false;
            }
            return true;
        });
        if (!why.empty()) return Statement{};
        const std::string unpack = left.is("attribute") ? "" : fmt::format(", {}, {}", count, index);
        return Statement{Statement::Cache, name, Node(), "",
                         fmt::format("_graphmend_cache(self, \"{}\", lambda: {}{})", name, right.text(), unpack)};
    }

    // A branch worth not evaluating when the test does not pick it (torch.cond).
    [[nodiscard]] bool costly() const { return calls_submodule || calls >= 8; }

    // Why an expression is not known to be pure, or "".
    std::string impurity(const Node& expr) {
        std::string why;
        syntax::walk(expr, [&](const Node& n) {
            if (!why.empty()) return false;
            if (n.is("lambda") || n.is("named_expression") || n.is("yield") || n.is("await")) {
                why = fmt::format("`{}` in a branch", n.type());
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

    // Why a project function's body is not known to be pure, or "": it binds only its own
    // names, and every call in it is pure (project functions are followed `depth` deep).
    std::string function_impurity(const analysis::FunctionRef& ref, int depth) {
        if (depth > 3) return "calls nested too deep to check";
        const Node body = ref.node.field("body");
        const std::string owner = enclosing_class(ref.node);
        std::string why;
        syntax::walk(body, [&](const Node& n) {
            if (!why.empty()) return false;
            if (n.is("function_definition") || n.is("class_definition") || n.is("global_statement") ||
                n.is("nonlocal_statement") || n.is("delete_statement") || n.is("yield") || n.is("await") ||
                n.is("raise_statement") || n.is("try_statement") || n.is("with_statement")) {
                why = fmt::format("a `{}`", n.type());
                return false;
            }
            if ((n.is("assignment") || n.is("augmented_assignment")) && !n.field("left").is("identifier") &&
                !n.field("left").is("pattern_list") && !n.field("left").is("tuple_pattern")) {
                why = fmt::format("it stores into `{}`", n.field("left").text());
                return false;
            }
            if (n.is("call")) {
                const Node fn = n.field("function");
                if (auto callee = ctx.project.callee(ref.file, n, owner)) {
                    why = function_impurity(*callee, depth + 1);
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

    static std::string enclosing_class(const Node& fn) {
        for (Node p = fn.parent(); p; p = p.parent()) {
            if (p.is("class_definition")) return text(p.field("name"));
            if (p.is("function_definition")) break;
        }
        return "";
    }

    std::string call_impurity(const Node& call, bool follow = true) {
        const Node fn = call.field("function");
        ++calls;
        if (follow) {
            Node def = analysis::enclosing_function(call);
            while (def && !def.is("function_definition")) def = analysis::enclosing_function(def);
            if (def) {
                if (auto callee = ctx.project.callee(ctx.file, call, enclosing_class(def))) {
                    if (auto why = function_impurity(*callee, 0); !why.empty()) {
                        return fmt::format("calls {}(), which is not pure: {}", fn.text(), why);
                    }
                    return "";
                }
            }
        }
        if (fn.is("identifier")) {
            if (kPureBuiltins.contains(fn.text())) return "";
            return fmt::format("calls {}(), which is not known to be pure", fn.text());
        }
        if (!fn.is("attribute")) return fmt::format("calls {}", fn.text());
        const std::string_view name = fn.field("attribute").text();
        const Node obj = fn.field("object");
        if (kGradUnsafe.contains(name)) grad_unsafe = true;
        if (obj.text() == "self") {
            const auto it = submodules.find(std::string(name));
            if (it != submodules.end() && kStatelessModules.contains(it->second)) {
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
        if (kImpureTorch.contains(name)) return fmt::format("{}() draws random numbers", name);
        if (kPureMethods.contains(name)) return "";
        return fmt::format("calls {}(), which is not known to be pure", fn.text());
    }

    // Why a block cannot become a lambda, or "". Fills `out`.
    std::string convert(const Node& block, Branch& out) { return convert(block.named_children(), out); }

    std::string convert(const std::vector<Node>& statements, Branch& out) {
        for (const Node& stmt : statements) {
            if (stmt.is("comment") || stmt.is("pass_statement")) continue;
            if (out.returns) return "a statement after `return`";
            if (stmt.is("return_statement")) {
                const auto vals = stmt.named_children();
                Node value = vals.empty() ? Node() : vals[0];
                if (value) {
                    if (auto why = impurity(value); !why.empty()) return why;
                }
                out.body.push_back({Statement::Return, "", value});
                out.returns = true;
                continue;
            }
            if (stmt.is("if_statement") && is_raise_check(stmt)) {
                // A check inside the branch: it must fire only when this branch would have
                // run, so its test is gated by the branch's own (Branch::gate).
                const Node test = stmt.field("condition");
                std::set<std::string> assigned;
                for (const auto& st : out.body) {
                    if (st.kind == Statement::Assign) assigned.insert(st.name);
                }
                std::string why;
                syntax::walk(stmt, [&](const Node& n) {
                    if (n.is("identifier") && is_read(n) && assigned.contains(text(n))) {
                        why = fmt::format("the check in the branch reads `{}`, assigned earlier in the branch", n.text());
                    }
                    return why.empty();
                });
                if (why.empty()) why = impurity(test);
                if (!why.empty()) return why;
                std::vector<Node> body;
                for (const Node& c : stmt.field("consequence").named_children()) {
                    if (!c.is("comment")) body.push_back(c);
                }
                const CheckCall c = check_call(std::string(kGate), body[0]);
                if (!c.refused.empty()) return "the check in the branch: " + c.refused;
                Statement st{Statement::Check, "", test, predicate(test), c.text};
                out.body.push_back(std::move(st));
                continue;
            }
            if (stmt.is("if_statement")) {
                std::string why;
                if (auto cached = cache_statement(stmt, why)) {
                    if (!why.empty()) return why;
                    out.body.push_back(std::move(*cached));
                    continue;
                }
            }
            if (!stmt.is("expression_statement") || stmt.named_children().size() != 1) {
                return fmt::format("a `{}` in a branch", stmt.type());
            }
            const Node e = stmt.named_children()[0];
            if (e.is("call") && e.field("function").text() == "self.register_buffer") {
                // `self.register_buffer("NAME", VALUE, ...)`: the buffer is rebound.
                const auto args = e.field("arguments").named_children();
                const std::string name = args.empty() ? "" : plain_name(args[0]);
                if (name.empty()) return fmt::format("`{}`: the buffer's name is not a literal", e.text());
                for (std::size_t i = 1; i < args.size(); ++i) {
                    const Node v = args[i].is("keyword_argument") ? args[i].field("value") : args[i];
                    if (auto why = impurity(v); !why.empty()) return why;
                }
                out.body.push_back({Statement::Rebind, name, Node(), "", std::string(e.text())});
                continue;
            }
            if (e.is("assignment") && e.field("left").is("attribute") &&
                e.field("left").field("object").text() == "self" && e.field("right") &&
                e.field("right").is("call")) {
                // `self.NAME = self.NAME.to(...)`: a no-op where device and dtype do not change.
                const Node left = e.field("left");
                const Node fn = e.field("right").field("function");
                bool copies = false;
                for (const Node& a : e.field("right").field("arguments").named_children()) {
                    copies = copies || (a.is("keyword_argument") && a.field("name").text() == "copy");
                }
                if (fn.is("attribute") && fn.field("attribute").text() == "to" &&
                    fn.field("object").text() == left.text() && !copies) {
                    if (auto why = impurity(e.field("right")); !why.empty()) return why;
                    out.body.push_back({Statement::SetAttr, text(left.field("attribute")), Node(), "",
                                        fmt::format("_graphmend_set_attr(self, \"{}\", {}, converts=True)",
                                                    text(left.field("attribute")), e.field("right").text())});
                    continue;
                }
            }
            if (e.is("augmented_assignment")) {
                // `self.BUFFER += INT`: a counter; the update stays conditional on the data.
                const Node left = e.field("left");
                const std::string op(e.field("operator").text());
                if (left.is("attribute") && left.field("object").text() == "self" &&
                    buffers.contains(text(left.field("attribute"))) && (op == "+=" || op == "-=") &&
                    e.field("right").is("integer")) {
                    out.body.push_back({Statement::Update, text(left.field("attribute")), e.field("right"), "", op});
                    continue;
                }
                return fmt::format("in-place update `{}`", e.text());
            }
            if (e.is("call") && e.field("function").is("attribute") &&
                e.field("function").field("attribute").text() == "copy_" &&
                e.field("function").field("object").is("identifier")) {
                const std::string name = text(e.field("function").field("object"));
                const auto args = e.field("arguments").named_children();
                if (args.size() != 1 || args[0].is("keyword_argument") || !site_def || !site_stmt ||
                    !fresh_local(site_def, site_stmt, name)) {
                    return fmt::format("in-place `{}` on a tensor that outlives the branch", e.text());
                }
                if (auto why = impurity(args[0]); !why.empty()) return why;
                Statement st{Statement::Assign, name, e};
                st.copy = true;
                out.body.push_back(std::move(st));
                continue;
            }
            if (e.is("call")) {
                const auto deferred = deferred_call(ctx, e);
                if (!deferred) return fmt::format("the branch has an effect: {}(...)", e.field("function").text());
                if (!deferred->refused.empty()) return "the branch's " + std::string(e.field("function").text()) +
                                                       "(...) cannot be deferred: " + deferred->refused;
                const std::string leading = deferred->leading.empty() ? "()" : "(" + deferred->leading + ",)";
                const std::string parts = fmt::format("\"{}\", {}, lambda: _graphmend_args({})", deferred->kind,
                                                      leading, deferred->arguments);
                out.body.push_back({Statement::Effect, "", Node(), parts});
                continue;
            }
            if (!e.is("assignment") || !e.field("right")) return fmt::format("a `{}` in a branch", e.type());
            const Node left = e.field("left");
            const Node right = e.field("right");
            if (left.is("attribute") || left.is("subscript")) {
                return fmt::format("the branch stores into `{}` (module or tensor state)", left.text());
            }
            if (right.is("assignment")) return "a chained assignment";
            if (auto why = impurity(right); !why.empty()) return why;
            if (left.is("pattern_list") || left.is("tuple_pattern")) {
                // `a, b = v` -> `_graphmend_unpackN := v`, then a = ...[0], b = ...[1]
                std::vector<std::string> names;
                for (const Node& t : left.named_children()) {
                    if (!t.is("identifier")) return fmt::format("unpacking assignment `{} = ...`", left.text());
                    names.push_back(text(t));
                }
                const std::string temp = fmt::format("unpack{}", ++unpacks);
                out.body.push_back({Statement::Assign, temp, right});
                for (std::size_t i = 0; i < names.size(); ++i) {
                    out.body.push_back({Statement::Assign, names[i], Node(), "", fmt::format("_graphmend_{}[{}]", temp, i)});
                }
                continue;
            }
            if (!left.is("identifier")) return fmt::format("unpacking assignment `{} = ...`", left.text());
            out.body.push_back({Statement::Assign, text(left), right});
        }
        return "";
    }
};

// self.NAME = <torch.nn class>(...) in the class's __init__.
std::map<std::string, std::string> submodules_of(const Context& ctx, const Node& function) {
    std::map<std::string, std::string> out;
    Node cls;
    for (Node p = function.parent(); p; p = p.parent()) {
        if (p.is("class_definition")) {
            cls = p;
            break;
        }
    }
    if (!cls) return out;
    const auto& classes = ctx.source().index.classes;
    const auto it = classes.find(text(cls.field("name")));
    if (it == classes.end()) return out;
    const auto init = it->second.methods.find("__init__");
    if (init == it->second.methods.end()) return out;
    syntax::walk(init->second, [&](const Node& n) {
        if (!n.is("assignment")) return true;
        const Node left = n.field("left");
        const Node right = n.field("right");
        if (left.is("attribute") && left.field("object").text() == "self" && right.is("call")) {
            const Node fn = right.field("function");
            const std::string_view cls_name = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
            const std::string_view root = fn.is("attribute") ? fn.field("object").text() : "";
            const bool from_torch = root == "nn" || root == "torch.nn" ||
                                    (fn.is("identifier") && ctx.source().index.find_import(text(fn)) != nullptr &&
                                     ctx.source().index.find_import(text(fn))->module.starts_with("torch"));
            if (from_torch) out[text(left.field("attribute"))] = std::string(cls_name);
        }
        return true;
    });
    return out;
}

// The buffers of the class of `function`: self.register_buffer("NAME", ...) in __init__.
std::set<std::string> buffers_of(const Context& ctx, const Node& function) {
    std::set<std::string> out;
    for (Node p = function.parent(); p; p = p.parent()) {
        if (!p.is("class_definition")) continue;
        const auto& classes = ctx.source().index.classes;
        const auto it = classes.find(text(p.field("name")));
        if (it == classes.end()) break;
        const auto init = it->second.methods.find("__init__");
        if (init == it->second.methods.end()) break;
        syntax::walk(init->second, [&](const Node& n) {
            if (n.is("call") && n.field("function").text() == "self.register_buffer") {
                const auto args = n.field("arguments").named_children();
                if (!args.empty() && args[0].is("string")) {
                    std::string name(args[0].text());
                    out.insert(name.substr(1, name.size() - 2));
                }
            }
            return true;
        });
        break;
    }
    return out;
}

// The expression a branch lambda returns: the live values (assignment form) or the
// returned value (return form), with assignments the result depends on bound by `:=`
// to `_graphmend_NAME` names.
std::string branch_value(const Branch& b, const std::vector<std::string>& live) {
    std::map<std::string, std::string> renamed;  // name -> current lambda-local name
    bool reads_renamed = false;                   // a statement reads a name an earlier one assigned
    std::map<std::string, std::string> values_at_step;  // name -> its assigned value, as bound
    std::vector<std::string> steps;
    auto substitute = [&](const Node& expr) {
        return rebuild(expr, [&](const Node& n) -> std::optional<std::string> {
            if (n.is("identifier") && is_read(n)) {
                if (const auto it = renamed.find(text(n)); it != renamed.end()) {
                    reads_renamed = true;
                    return it->second;
                }
            }
            return std::nullopt;
        });
    };
    std::string result;
    for (const auto& st : b.body) {
        if (st.kind == Statement::Check) {
            std::string call = st.raw;
            const std::string gated = fmt::format("_graphmend_and({}, lambda: {})", b.gate, st.effect);
            call.replace(call.find(kGate), kGate.size(), gated);
            steps.push_back(std::move(call));
            continue;
        }
        if (st.copy) {
            const std::string dst = text(st.value.field("function").field("object"));
            const auto it = renamed.find(dst);
            const std::string local = "_graphmend_" + st.name;
            std::string value = fmt::format("_graphmend_copy({}, {})", it == renamed.end() ? dst : it->second,
                                            substitute(st.value.field("arguments").named_children()[0]));
            reads_renamed = true;  // the bindings form: a copy is never a plain value
            steps.push_back(fmt::format("{} := {}", local, value));
            values_at_step[st.name] = std::move(value);
            renamed[st.name] = local;
            continue;
        }
        if (st.kind == Statement::Return) {
            result = !st.value ? "None"
                     : st.value.is("expression_list") ? "(" + substitute(st.value) + ")"
                                                      : substitute(st.value);
            continue;
        }
        const std::string local = "_graphmend_" + st.name;
        std::string value = !st.raw.empty() ? st.raw : substitute(st.value);
        if (st.raw.empty() && st.value.is("expression_list")) value = "(" + value + ")";
        steps.push_back(fmt::format("{} := {}", local, value));
        values_at_step[st.name] = std::move(value);
        renamed[st.name] = local;
    }
    if (!b.returns) {
        std::vector<std::string> values;
        for (const auto& name : live) {
            const auto it = renamed.find(name);
            values.push_back(it == renamed.end() ? name : it->second);
        }
        result = values.size() == 1 ? values[0] : "(" + fmt::format("{}", fmt::join(values, ", ")) + ")";
    }
    if (steps.empty()) return result;
    // Independent assignments, one per live name, need no bindings: return their values.
    if (!b.returns && !reads_renamed) {
        auto& direct = values_at_step;
        const bool one_each = direct.size() == b.body.size() &&
                              std::all_of(direct.begin(), direct.end(), [&](const auto& kv) {
                                  return std::find(live.begin(), live.end(), kv.first) != live.end();
                              });
        if (one_each) {
            std::vector<std::string> values;
            for (const auto& name : live) values.push_back(direct.contains(name) ? direct[name] : name);
            return values.size() == 1 ? values[0] : fmt::format("({})", fmt::join(values, ", "));
        }
    }
    return fmt::format("({}, {})[-1]", fmt::join(steps, ", "), result);
}

// `, only=lambda: (A, self.B)`: the values that some branch reads and another does not,
// which may carry gradients (tensors, modules, or of unknown kind). Under a select the
// branch not taken still gets a (zero) gradient, where the `if` left `grad` as None; so
// the runtime keeps the `if` when grad mode is on and one of these requires grad.
// `reads[i]` are the expressions branch i evaluates; `implicit`, the names an `if`
// without else leaves as they were (its false branch reads them).
std::string one_sided_reads(const Context& ctx, const Scope& scope, const std::vector<Branch>& branches,
                            const std::vector<std::vector<Node>>& reads, const std::vector<std::string>& implicit) {
    std::vector<Reads> per;
    for (std::size_t i = 0; i < branches.size(); ++i) {
        Reads r;
        std::size_t k = 0;
        for (const auto& st : branches[i].body) {
            if (st.value && k < reads[i].size() && reads[i][k] == st.value) {
                collect_reads(st.value, scope.locals, r);
                ++k;
            }
            if (st.kind == Statement::Assign) r.assigned.insert(st.name);
        }
        per.push_back(std::move(r));
    }
    if (!implicit.empty() || per.size() == 1) {
        Reads r;
        for (const auto& name : implicit) r.roots.emplace(name, Node());
        per.push_back(std::move(r));
    }
    std::map<std::string, Node> one_sided;
    for (const auto& r : per) {
        for (const auto& [name, node] : r.roots) {
            const bool everywhere = std::all_of(per.begin(), per.end(), [&](const Reads& o) { return o.roots.contains(name); });
            if (everywhere) continue;
            if (node) {
                const analysis::Value v = ctx.values.eval(ctx.file, node);
                if (v.kinds != 0 && !(v.kinds & (analysis::kTensor | analysis::kModule | analysis::kUnknown |
                                                 analysis::kSeq))) {
                    continue;  // a number, bool, None, string: no gradient
                }
            }
            if (!one_sided.contains(name) || !one_sided[name]) one_sided[name] = node;
        }
    }
    if (one_sided.empty()) return "";
    std::vector<std::string> names;
    for (const auto& [name, node] : one_sided) names.push_back(name);
    return fmt::format(", only=lambda: ({},)", fmt::join(names, ", "));
}

class PredicatedControlFlowRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        syntax::walk(ctx.source().tree.root(), [&](const Node& n) {
            if (n.is("boolean_operator")) {
                if (auto site = value_operator_site(ctx, n)) out.push_back(std::move(*site));
                return true;
            }
            if (!n.is("if_statement") && !n.is("conditional_expression")) return true;
            Node def = analysis::enclosing_function(n);
            while (def && !def.is("function_definition")) def = analysis::enclosing_function(def);
            if (!def || !ctx.project.in_scope(ctx.file, def.begin())) return true;
            const Scope scope = analysis::scope_of(def, n);
            const auto tensors = tensor_locals(def);
            if (n.is("conditional_expression")) {
                const auto parts = n.named_children();  // body, test, alternative
                if (parts.size() == 3 && (ctx.values.data_test(ctx.file, parts[1]) || reads_data(parts[1], tensors))) {
                    Site site = site_for_expression(ctx, n, def, parts, scope);
                    with_scalar_reads(site, scalar_reads(ctx, def, {parts[1]}));
                    out.push_back(std::move(site));
                }
                return true;
            }
            if (is_raise_check(n)) return true;
            if (!ctx.values.data_test(ctx.file, n.field("condition")) && !reads_data(n.field("condition"), tensors)) return true;
            std::vector<Node> tests{n.field("condition")};
            for (const Node& alt : n.children()) {
                if (alt.is("elif_clause")) tests.push_back(alt.field("condition"));
            }
            Site site = site_for(ctx, n, def, scope);
            with_scalar_reads(site, scalar_reads(ctx, def, tests));
            out.push_back(std::move(site));
            return true;
        });
    }

private:
    // True when `n` is (part of) the test of an if / elif / while / assert / conditional
    // expression: the statement's own rewrite handles it.
    static bool in_test_position(const Node& n) {
        Node child = n;
        Node p = n.parent();
        while (p && (p.is("boolean_operator") || p.is("not_operator") || p.is("parenthesized_expression"))) {
            child = p;
            p = p.parent();
        }
        if (!p) return false;
        if ((p.is("if_statement") || p.is("elif_clause") || p.is("while_statement")) && p.field("condition") == child) {
            return true;
        }
        if (p.is("assert_statement")) return true;
        if (p.is("conditional_expression")) {
            const auto parts = p.named_children();
            return parts.size() == 3 && parts[1] == child;
        }
        return false;
    }

    // `A and B` / `A or B` used as a value (`return (a >= lo).all() and (a <= hi).all()`),
    // where A is a tensor: Python takes bool(A), a graph break (GB0170). Rewritten to
    // _graphmend_and(A, lambda: B, value=True), which selects `B if A else A` with
    // torch.where when both are tensors of one dtype, shape and device.
    static std::optional<Site> value_operator_site(const Context& ctx, const Node& n) {
        if (n.parent().is("boolean_operator") || in_test_position(n)) return std::nullopt;
        for (Node p = n.parent(); p; p = p.parent()) {
            if (p.is("lambda")) return std::nullopt;
            if (p.is("function_definition")) break;
        }
        Node def = analysis::enclosing_function(n);
        while (def && !def.is("function_definition")) def = analysis::enclosing_function(def);
        if (!def || !ctx.project.in_scope(ctx.file, def.begin())) return std::nullopt;
        if (!ctx.values.eval(ctx.file, n.field("left")).tensor()) return std::nullopt;
        Site site = new_site(n, n.text());
        site.what = std::string(n.text().substr(0, 57));
        if (site.what.size() < n.text().size()) site.what += "...";
        for (char& c : site.what) {
            if (c == '\n' || c == '\r' || c == '\t') c = ' ';
        }
        Checker checker{ctx, submodules_of(ctx, def), buffers_of(ctx, def)};
        std::string why;
        syntax::walk(n, [&](const Node& c) {
            if (!why.empty()) return false;
            if (c.is("not_operator")) why = "a `not` inside a tensor `and`/`or` used as a value";
            return why.empty();
        });
        if (why.empty()) why = checker.impurity(n.field("right"));
        if (!why.empty()) {
            site.reason = why;
            return site;
        }
        std::function<std::string(const Node&)> emit = [&](const Node& c) -> std::string {
            return rebuild(c, [&](const Node& b) -> std::optional<std::string> {
                if (!b.is("boolean_operator")) return std::nullopt;
                return fmt::format("_graphmend_{}({}, lambda: {}, value=True)", b.field("operator").text(),
                                   emit(b.field("left")), emit(b.field("right")));
            });
        };
        site.fix = Fix{{{n.begin(), n.end(), emit(n)}}, Applicability::Safe, {"predicated_control_flow"}};
        site.detail = "`and`/`or` on a tensor selected with torch.where";
        return site;
    }

    static Site new_site(const Node& n, std::string_view test) {
        Site site;
        site.rule = std::string(kInfo.name);
        site.code = std::string(kInfo.code);
        site.where = n.position();
        site.begin = n.begin();
        site.end = n.end();
        site.what = n.is("if_statement") ? "if " : "... if ";
        for (char c : test) {  // one line, runs of blanks folded
            const bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\n';
            if (!blank || site.what.back() != ' ') site.what += blank ? ' ' : c;
        }
        if (n.is("conditional_expression")) site.what += " else ...";
        if (site.what.size() > 60) site.what = site.what.substr(0, 57) + "...";
        site.graph_break = "GB0170";
        return site;
    }

    // `A if TEST else B` -> `_graphmend_if(TEST, lambda: A, lambda: B, grad_safe=...)`.
    static Site site_for_expression(const Context& ctx, const Node& expr, const Node& def,
                                    const std::vector<Node>& parts, const Scope& scope) {
        Site site = new_site(expr, parts[1].text());
        Checker checker{ctx, submodules_of(ctx, def), buffers_of(ctx, def)};
        if ((is_literal(parts[0]) || is_literal(parts[2])) && parts[0].text() != parts[2].text()) {
            site.reason = "a branch is a Python constant: a select cannot choose it without making it a tensor";
            return site;
        }
        for (const Node& part : parts) {
            if (auto why = checker.impurity(part); !why.empty()) {
                site.reason = why;
                return site;
            }
            if (auto name = maybe_unbound(part, scope, {}); !name.empty()) {
                site.reason = fmt::format("`{}` may have no value here, and both branches would run", name);
                return site;
            }
        }
        const std::string replacement =
            fmt::format("_graphmend_if({}, lambda: {}, lambda: {}, grad_safe={}{})", predicate(parts[1]),
                        parts[0].text(), parts[2].text(), checker.grad_unsafe ? "False" : "True",
                        checker.costly() ? ", costly=True" : "");
        site.fix = Fix{{{expr.begin(), expr.end(), replacement}}, Applicability::Safe, {"predicated_control_flow"}};
        site.detail = "selected with torch.where";
        return site;
    }

    static Site site_for(const Context& ctx, const Node& stmt, const Node& def, const Scope& scope) {
        Site site = new_site(stmt, stmt.field("condition").text());

        Checker checker{ctx, submodules_of(ctx, def), buffers_of(ctx, def)};
        checker.site_def = def;
        checker.site_stmt = stmt;
        std::vector<Branch> branches;
        branches.push_back({stmt.field("condition"), {}, false});
        site.reason = checker.convert(stmt.field("consequence"), branches.back());
        bool has_else = false;
        for (const Node& alt : stmt.children()) {
            if (!site.reason.empty()) break;
            if (alt.is("elif_clause")) {
                branches.push_back({alt.field("condition"), {}, false});
                site.reason = checker.convert(alt.field("consequence"), branches.back());
                if (site.reason.empty()) {
                    if (auto why = checker.impurity(alt.field("condition")); !why.empty()) site.reason = why;
                }
            } else if (alt.is("else_clause")) {
                branches.push_back({Node(), {}, false});
                has_else = true;
                site.reason = checker.convert(alt.field("body"), branches.back());
            }
        }
        if (site.reason.empty()) {
            if (auto why = checker.impurity(stmt.field("condition")); !why.empty()) site.reason = "the test " + why;
        }
        if (!site.reason.empty()) return site;
        const bool has_state = std::any_of(branches.begin(), branches.end(), [](const Branch& b) {
            return std::any_of(b.body.begin(), b.body.end(), [](const Statement& s) { return Checker::is_state(s); });
        });
        if (has_state) return state_site(std::move(site), stmt, def, scope, checker, branches);

        const bool has_effects = std::any_of(branches.begin(), branches.end(), [](const Branch& b) {
            return std::any_of(b.body.begin(), b.body.end(), [](const Statement& s) { return s.kind == Statement::Effect; });
        });
        if (has_effects) return effects_site(std::move(site), stmt, branches);
        // `if TEST: ... return A` followed by the rest of the function ending in a return:
        // the rest is the false branch.
        std::uint32_t span_end = stmt.end();
        if (!has_else && branches.size() == 1 && branches[0].returns && stmt.parent() == def.field("body")) {
            std::vector<Node> rest;
            for (const Node& s : stmt.parent().named_children()) {
                if (s.begin() > stmt.begin() && !s.is("comment")) rest.push_back(s);
            }
            Branch after{Node(), {}, false};
            if (auto why = checker.convert(rest, after); !why.empty()) {
                site.reason = "the code after the early return: " + why;
                return site;
            }
            if (!after.returns) {
                site.reason = "the code after the early return does not end in a return";
                return site;
            }
            span_end = rest.back().end();
            branches.push_back(std::move(after));
            has_else = true;
        }
        for (const auto& b : branches) {
            std::set<std::string> assigned;
            for (const auto& st : b.body) {
                const std::string name = st.value ? maybe_unbound(st.value, scope, assigned) : "";
                if (!name.empty()) {
                    site.reason = fmt::format("`{}` may have no value here, and both branches would run", name);
                    return site;
                }
                if (st.kind == Statement::Assign) assigned.insert(st.name);
            }
        }
        const bool all_return = has_else && std::all_of(branches.begin(), branches.end(),
                                                        [](const Branch& b) { return b.returns; });
        const bool any_return = std::any_of(branches.begin(), branches.end(), [](const Branch& b) { return b.returns; });
        if (any_return && !all_return) {
            site.reason = "a branch returns while another falls through";
            return site;
        }
        if (all_return) {
            // Values that provably differ in kind (None against a tensor, tuples of other
            // lengths) cannot be selected: the runtime would evaluate both branches and then
            // fall back to the `if`, breaking the graph more than before.
            const Branch* first = nullptr;
            analysis::Value first_value;
            for (const auto& b : branches) {
                const auto ret = std::find_if(b.body.begin(), b.body.end(),
                                              [](const Statement& st) { return st.kind == Statement::Return; });
                const analysis::Value v = ret->value ? ctx.values.eval(ctx.file, ret->value)
                                                     : analysis::Value::of(analysis::kNone);
                if (first == nullptr) {
                    first = &b;
                    first_value = v;
                    continue;
                }
                if (auto clash = kind_clash(first_value, v); !clash.empty()) {
                    site.reason = "the branches return values of different kinds (" + clash +
                                  "): no select can express that";
                    return site;
                }
            }
        }
        // Conditional counters (self.BUFFER += INT): one `if` without else, and no value in it
        // may read the buffer.
        std::vector<Statement> updates;
        for (const auto& b : branches) {
            for (const auto& st : b.body) {
                if (st.kind == Statement::Update) updates.push_back(st);
            }
        }
        if (!updates.empty()) {
            if (has_else || branches.size() != 1 || any_return) {
                site.reason = "a buffer update under an `if` with elif/else or a return";
                return site;
            }
            for (const auto& st : branches[0].body) {
                if (st.kind == Statement::Update || !st.value) continue;
                for (const auto& u : updates) {
                    if (std::string_view(st.value.text()).find("self." + u.name) != std::string_view::npos) {
                        site.reason = fmt::format("a value in the branch reads the updated buffer self.{}", u.name);
                        return site;
                    }
                }
            }
            auto& body = branches[0].body;
            std::erase_if(body, [](const Statement& s) { return s.kind == Statement::Update; });
        }
        std::vector<std::string> live;
        if (!all_return) {
            for (const auto& b : branches) {
                for (const auto& st : b.body) {
                    if (scope.read_outside.contains(st.name) &&
                        std::find(live.begin(), live.end(), st.name) == live.end()) {
                        live.push_back(st.name);
                    }
                }
            }
            if (live.empty() && updates.empty()) {
                site.reason = "no value of the branches is used after the `if`";
                return site;
            }
            // A live name that some branch sets to a Python constant: the runtime could
            // never select it (it keeps Python values as they are), so say so here.
            for (const auto& name : live) {
                std::set<std::string> values;
                bool literal = false;
                for (const auto& b : branches) {
                    for (const auto& st : b.body) {
                        if (st.kind != Statement::Assign || st.name != name || !st.value) continue;
                        literal = literal || is_literal(st.value);
                        values.insert(text(st.value));
                    }
                }
                if (literal && values.size() > 1) {
                    site.reason = fmt::format("`{}` is set to a Python constant in a branch: a select cannot choose it "
                                              "without making it a tensor",
                                              name);
                    return site;
                }
                if (literal && (!has_else || values.size() == 1)) {
                    bool everywhere = has_else;
                    for (const auto& b : branches) {
                        everywhere = everywhere && std::any_of(b.body.begin(), b.body.end(),
                                                               [&](const Statement& s) { return s.name == name; });
                    }
                    if (!everywhere) {
                        site.reason = fmt::format("`{}` is set to a Python constant in a branch: a select cannot "
                                                  "choose it without making it a tensor",
                                                  name);
                        return site;
                    }
                }
            }
            for (const auto& name : live) {
                const bool everywhere = has_else && std::all_of(branches.begin(), branches.end(), [&](const Branch& b) {
                    return std::any_of(b.body.begin(), b.body.end(),
                                       [&](const Statement& s) { return s.name == name; });
                });
                if (!everywhere && !scope.bound_before.contains(name)) {
                    site.reason = fmt::format("`{}` has no value before the `if` on the path that does not assign it",
                                              name);
                    return site;
                }
            }
        }

        // Build the call from the last branch backwards: elif chains nest in the false lambda.
        // Checks inside a branch fire only when the branch would have run: the test is
        // bound once (`(_graphmend_pLINE := TEST)`) and gates them (`_graphmend_and(GATE, ...)`).
        const bool has_checks = std::any_of(branches.begin(), branches.end(), [](const Branch& b) {
            return std::any_of(b.body.begin(), b.body.end(), [](const Statement& st) { return st.kind == Statement::Check; });
        });
        std::string first_pred = predicate(branches[0].test);
        if (has_checks) {
            if (branches.size() > 2 || (branches.size() == 2 && branches[1].test)) {
                site.reason = "a check inside a branch of an if/elif chain";
                return site;
            }
            const std::string bound = fmt::format("_graphmend_p{}", stmt.position().line);
            branches[0].gate = bound;
            if (branches.size() == 2) branches[1].gate = fmt::format("_graphmend_not({})", bound);
            first_pred = fmt::format("({} := {})", bound, first_pred);
        }
        std::vector<std::vector<Node>> reads;
        for (const auto& b : branches) {
            reads.emplace_back();
            for (const auto& st : b.body) {
                if (st.value) reads.back().push_back(st.value);
            }
        }
        std::vector<std::string> implicit;  // an `if` without else leaves the live names as they were
        if (!has_else) implicit = live;
        const std::string grad = std::string(checker.grad_unsafe ? "False" : "True") +
                                 (checker.costly() ? ", costly=True" : "") +
                                 one_sided_reads(ctx, scope, branches, reads, implicit);
        std::string value;
        if (!has_else) value = live.size() == 1 ? live[0] : fmt::format("({})", fmt::join(live, ", "));
        std::vector<std::string> pieces;  // of the outermost call, laid out below
        for (auto it = branches.rbegin(); it != branches.rend(); ++it) {
            if (!it->test) {
                value = branch_value(*it, live);
                continue;
            }
            const std::string pred = it->test == branches[0].test ? first_pred : predicate(it->test);
            pieces = {fmt::format("{}_graphmend_if({},", all_return ? "return " : fmt::format("{} = ", fmt::join(live, ", ")),
                                  pred),
                      fmt::format("lambda: {},", branch_value(*it, live)), fmt::format("lambda: {},", value),
                      fmt::format("grad_safe={},", grad)};
            value = fmt::format("_graphmend_if({}, lambda: {}, lambda: {}, grad_safe={})", pred,
                                branch_value(*it, live), value, grad);
        }
        site.end = span_end;
        std::string updates_text;
        for (const auto& u : updates) {
            updates_text += fmt::format("_graphmend_update({}, self, \"{}\", \"{}\", {}); ", predicate(branches[0].test),
                                        u.name, u.raw, u.value.text());
        }
        if (!updates.empty() && live.empty()) {
            // Only counters: one line of updates, the rest blank.
            std::string out = updates_text.substr(0, updates_text.size() - 2);
            for (auto n = syntax::count_newlines(out); n < syntax::count_newlines(stmt.source().slice(stmt.begin(), span_end)); ++n) {
                out += stmt.source().eol();
            }
            site.fix = Fix{{{stmt.begin(), span_end, out}}, Applicability::Safe, {"predicated_control_flow"}};
            site.detail = "the buffer update stays conditional on the data";
            return site;
        }
        if (!pieces.empty()) pieces[0] = updates_text + pieces[0];
        site.fix = Fix{{{stmt.begin(), span_end, layout(stmt, span_end, pieces)}}, Applicability::Safe,
                       has_checks ? std::vector<std::string>{"deferred_effects", "predicated_control_flow"}
                                  : std::vector<std::string>{"predicated_control_flow"}};
        site.detail = checker.grad_unsafe
                          ? "selected with torch.where; the original control flow is kept when the branch values "
                            "require grad (a branch can produce inf/NaN)"
                          : "selected with torch.where";
        if (!updates.empty()) site.detail += "; the buffer update stays conditional on the data";
        return site;
    }

    // `if TEST: A else: B` where A and B rebind the same buffers of the module, maybe after
    // filling a cache or converting an attribute to where it already is ->
    // `_graphmend_if_state(TEST, self, lambda self: (A...), lambda self: (B...))`. Unsafe:
    // traced, the buffer becomes a selected copy (equal values, another tensor object) and
    // a missing cache is computed but not stored, so methods that make it are assumed pure.
    static Site state_site(Site site, const Node& stmt, const Node& def, const Scope& scope, const Checker& checker,
                           const std::vector<Branch>& branches) {
        if (branches.size() != 2 || branches[1].test) {
            site.reason = "module state is rebound under an `if` without `else`, or with `elif`";
            return site;
        }
        const auto params = def.field("parameters").named_children();
        if (params.empty() || params[0].text() != "self") {
            site.reason = "module state is rebound in a function whose first parameter is not `self`";
            return site;
        }
        std::array<std::set<std::string>, 2> rebound;
        for (std::size_t i = 0; i < 2; ++i) {
            for (const auto& st : branches[i].body) {
                if (!Checker::is_state(st)) {
                    site.reason = "a branch that rebinds module state also assigns names, returns or has effects";
                    return site;
                }
                if (st.kind == Statement::Rebind) rebound[i].insert(st.name);
            }
        }
        if (rebound[0] != rebound[1] || rebound[0].empty()) {
            site.reason = "the branches do not rebind the same buffers (register_buffer)";
            return site;
        }
        for (const auto& name : checker.dead_targets) {
            if (scope.read_outside.contains(name)) {
                site.reason = fmt::format("`{}`, unpacked with a cached value, is read after the `if`", name);
                return site;
            }
        }
        std::vector<std::string> pieces{fmt::format("_graphmend_if_state({}, self,", predicate(branches[0].test))};
        for (const auto& b : branches) {  // one piece per statement: a line each where the `if` had them
            for (std::size_t i = 0; i < b.body.size(); ++i) {
                const bool last = i + 1 == b.body.size();
                pieces.push_back(fmt::format("{}{}{}", i == 0 ? "lambda self: (" : "", b.body[i].raw,
                                             !last ? "," : b.body.size() == 1 ? ",)," : "),"));
            }
        }
        site.fix = Fix{{{stmt.begin(), stmt.end(), layout(stmt, stmt.end(), pieces)}}, Applicability::Unsafe,
                       {"predicated_control_flow"}};
        std::vector<std::string> names(rebound[0].begin(), rebound[0].end());
        site.detail = fmt::format("buffer {} selected with torch.where; unsafe: under torch.compile the buffer is "
                                  "rebound to a selected copy (equal values, not the tensor the branch names)",
                                  fmt::join(names, ", "));
        std::set<std::string> caches;
        for (const auto& b : branches) {
            for (const auto& st : b.body) {
                if (st.kind == Statement::Cache) caches.insert("self." + st.name);
            }
        }
        if (!caches.empty()) {
            site.detail += fmt::format(", and a missing {} is computed but not stored", fmt::join(caches, ", "));
        }
        if (!checker.assumed_pure.empty()) {
            std::set<std::string> uniq(checker.assumed_pure.begin(), checker.assumed_pure.end());
            site.detail += fmt::format(" ({} taken to have no effects)", fmt::join(uniq, ", "));
        }
        return site;
    }

    // `if TEST: <print / logging / warnings calls>` -> one _graphmend_when(TEST, ...) per
    // call, on the statement's lines: each message is deferred with the test.
    static Site effects_site(Site site, const Node& stmt, const std::vector<Branch>& branches) {
        const bool only_effects = std::all_of(branches[0].body.begin(), branches[0].body.end(),
                                              [](const Statement& s) { return s.kind == Statement::Effect; });
        if (branches.size() != 1 || !only_effects) {
            site.reason = "a branch mixes deferred messages with values, or the `if` has an elif/else";
            return site;
        }
        const auto& src = stmt.source();
        const std::string eol(src.eol());
        const std::string indent(src.text().substr(src.line_start(stmt.position().line), stmt.position().col - 1));
        const std::string test = predicate(branches[0].test);
        std::string out;
        for (const auto& s : branches[0].body) {
            if (!out.empty()) out += eol + indent;
            out += fmt::format("_graphmend_when({}, {})", test, s.effect);
        }
        syntax::walk(stmt, [&](const Node& c) {
            if (c.is("comment")) out += eol + indent + std::string(c.text());
            return true;
        });
        for (auto n = syntax::count_newlines(out); n < syntax::count_newlines(stmt.text()); ++n) out += eol;
        site.fix = Fix{{{stmt.begin(), stmt.end(), out}}, Applicability::Safe,
                       {"deferred_effects", "predicated_control_flow"}};
        site.detail = "each message deferred together with the test";
        return site;
    }

    // The call's pieces joined with line breaks where the statement had them (at most one
    // per piece, then before the closing ')'), the statement's comments on lines of their
    // own inside the parentheses, and blank lines until the line count is the original's:
    // code below the statement keeps its line numbers.
    static std::string layout(const Node& stmt, std::uint32_t end, const std::vector<std::string>& pieces) {
        const auto& src = stmt.source();
        const std::string eol(src.eol());
        const std::string indent(src.text().substr(src.line_start(stmt.position().line), stmt.position().col - 1));
        const std::string inner = indent + (indent.find('\t') != std::string::npos ? "\t" : "    ");
        std::vector<std::string> comments;
        for (Node n = stmt; n && n.begin() < end; n = Node(ts_node_next_sibling(n.raw()), &src)) {
            syntax::walk(n, [&](const Node& c) {
                if (c.is("comment")) comments.emplace_back(c.text());
                return true;
            });
        }
        std::size_t budget = syntax::count_newlines(src.slice(stmt.begin(), end));
        for (const auto& p : pieces) budget -= std::min(budget, syntax::count_newlines(p));
        // Each comment takes a line, and then ')' needs one of its own.
        const std::size_t reserved = comments.empty() ? 0 : comments.size() + 1;
        std::size_t breaks = budget > reserved ? budget - reserved : 0;
        std::string out = pieces[0];
        for (std::size_t i = 1; i < pieces.size(); ++i) {
            out += breaks > 0 ? eol + inner : " ";
            breaks -= std::min<std::size_t>(breaks, 1);
            out += pieces[i];
        }
        for (const auto& c : comments) out += eol + inner + c;
        std::size_t used = syntax::count_newlines(out) - syntax::count_newlines(pieces[0]);
        for (std::size_t i = 1; i < pieces.size(); ++i) used -= std::min(used, syntax::count_newlines(pieces[i]));
        if (!comments.empty() || used < budget) {
            for (; used + 1 < budget; ++used) out += eol;
            return out + eol + indent + ")";
        }
        if (out.ends_with(",")) out.pop_back();
        return out + ")";
    }
};

}  // namespace

std::unique_ptr<Rule> make_predicated_control_flow_rule() {
    return std::make_unique<PredicatedControlFlowRule>();
}

}  // namespace graphmend::rules

// GM201 predicated-control-flow, private to src/rules/gm201_predicated_control_flow/ (the rule's
// description, its fix and its refusals: rule.cpp).
//
//   rule.cpp       finding the sites; conditional expressions and `and`/`or` values
//   statement.cpp  an if/elif/else statement, step by step: its refusals, then its call
//                  (and the state and message forms)
//   layout.cpp     whether the text shows one layout for the branch values
//   none_paths.cpp a live name None on a path the `if` leaves, and set by a branch
//   branches.cpp   a branch's statements as the Statements a lambda evaluates (Checker::convert)
//   purity.cpp     which calls and expressions a branch may evaluate when not taken
//   guarded_index.cpp  `X[I] if I >= 0 else B`: the index clamped on the other path
//   emission.cpp   the text: a branch's lambda value, the one-sided reads, the layout
//   aliasing.cpp   when a select's new tensor differs from the branch's own, visibly
//   loop_skip.cpp  `if TEST: continue` in a loop over a static range: an active mask
//   truth_reads.cpp  a name set to True/False that is only ever tested for truth
//   live_names.cpp   the names live after the `if`, and the Python constants among their values
//   refusal_help.cpp the help line of a refused site
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/liveness.hpp"
#include "graphmend/rule.hpp"
#include "graphmend/runtime_sources.hpp"
#include "rules/support/check_call.hpp"

namespace graphmend::rules::control_flow {

using analysis::Scope;
using syntax::Node;

extern const RuleInfo kInfo;

/// The identifier a plain string literal spells ("inv_freq" -> inv_freq), or "".
std::string plain_name(const Node& n);

/// True for True / False / None and number and string literals.
bool is_literal(const Node& n);

// --- layout.cpp
/// True when the text shows that `a` and `b` have one layout (shape, dtype and device; see
/// layout_source in layout.cpp): the select is taken whenever the test is a tensor.
bool layouts_shown_equal(const Context& ctx, const Node& a, const Node& b);

// --- statement.cpp (besides site_for)
/// How the values of `a` and `b` provably differ in kind ("None against a tensor", "a Python
/// number against a tensor", tuples of other lengths), or "": no select can choose between them.
std::string value_kind_clash(const Context& ctx, const Node& a, const Node& b);

// --- refusal_help.cpp
/// What the user can change so that a site refused for `reason` becomes a select (its help
/// line), or "" when the reason has none listed.
std::string refusal_help(std::string_view reason);

// --- truth_reads.cpp
/// When every read of `name` in the function `def` (nested functions and lambdas included)
/// only asks its truth (`if name:`, `not name`, `while a and name:`, `assert name`): the
/// first read, or an invalid Node when there is none. nullopt when some read uses the value
/// itself (returned, stored, passed, compared, changed by `|=`), or a `global`, `nonlocal`
/// or `del` names it.
std::optional<Node> truth_reads_only(const Node& def, const std::string& name);

// --- aliasing.cpp
/// True when `value` may evaluate to an existing tensor or a view of one: a name, an
/// attribute, an item, a call of a conversion or view method (`.to`, `.view`, `.detach`, ...),
/// or a call whose result is not known (a project function, `self.layer(x)`: nn.Identity and
/// dropout in eval return their input).
bool may_alias(const Node& value);
/// How `def` changes a tensor that one of `names` holds after `site` runs (below it, or in a
/// loop around it), or "": an in-place
/// method (`NAME.add_()`), a store into it (`NAME[...] = `, `NAME.attr = `), an augmented
/// assignment (in place on a tensor), `out=NAME`, or keeping it in the module
/// (`self.X = NAME`, register_buffer, setattr). Rebinding between is not followed.
std::string mutated_elsewhere(const Node& def, const Node& site, const std::set<std::string>& names);
/// Why a select at `site` must not replace the `if`, or "": the original hands out a branch's
/// own object where a select makes a new tensor, and the code can tell. That is when a branch
/// value may alias (may_alias over `values`, or `keeps_old`: a path leaves a target as it
/// was) and either the result is stored into `store` (an attribute or item target; invalid
/// for none) or `names`, the select's targets, are changed in place elsewhere in `def`.
std::string alias_refusal(const Node& def, const Node& site, const std::vector<Node>& values, bool keeps_old,
                          const std::set<std::string>& names, const Node& store);

// --- purity.cpp
/// The names of a function's parameters in order, "*" for one no call binds by position.
std::vector<std::string> parameter_names(const Node& function);
/// Why `name` may be another object where `at` changes it in place, or "": `function` binds it
/// before `at`, or in a loop around it.
std::string rebound_before(const Node& function, const std::string& name, const Node& at);

/// One statement of a branch, as the branch's lambda evaluates it.
struct Statement {
    // Rebind, SetAttr and Cache are module state (the state form, _graphmend_if_state):
    // `self.register_buffer("NAME", V, ...)`, `self.NAME = self.NAME.to(...)` and
    // `if not hasattr(self, "NAME"): self.NAME[, _] = MAKE`; `raw` is the expression
    // the branch lambda evaluates for it.
    // Check: `if TEST: raise E(...)` inside the branch; `effect` is TEST as a predicate and
    // `check` the call, made when the branch is emitted under the branch's gate and TEST.
    // An Assign with `copy` set is
    // `NAME.copy_(SRC)` on a fresh local (`value` is the call).
    enum Kind { Assign, Return, Effect, Update, Rebind, SetAttr, Cache, Check } kind = Assign;
    std::string name{};  // Assign; the buffer or attribute of Rebind / SetAttr / Cache
    Node value{};        // may be invalid for a bare `return`
    std::string effect{};  // Effect: the arguments of _graphmend_when after the test
    std::string raw{};     // Assign: a value already written in terms of lambda locals
                         // Update: the operator, "+=" or "-="
    bool copy = false;
    std::set<std::uint32_t> clones{};  // Assign: identifiers of `value` (their first byte) evaluated as
                                       // `NAME.clone()`, a fresh local the call changes in place
    std::string condition{};  // Effect: the deferred call's condition (DeferredCall::condition)
    std::string marked{};     // Effect: `effect` with `lambda: None` for the call's line, and
    std::uint32_t line = 0;   // the line the helper call must sit on for it (DeferredCall::line)
    CheckCall check{};        // Check
};

struct Branch {
    Node test;  // invalid for `else`
    std::vector<Statement> body;
    bool returns = false;
    std::string gate{};  // with a Check: the test under which this branch runs
};

/// Why a branch cannot run when not taken, and what running it costs: a Checker turns the
/// blocks of one site into Branches (branches.cpp) and judges their purity (purity.cpp).
/// (guarded_index.cpp) `I >= 0` (`0 <= I`, `I > -1`) as the test of `A if TEST else B`: where
/// A runs, `I` is not negative; `I < 0` (`0 > I`, `I <= -1`): the same of B. `index` is I's
/// text, [begin, end) the branch's bytes.
struct IndexGuard {
    std::string index;
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
};
/// The guard a test gives one of the two branches, or nullopt.
std::optional<IndexGuard> index_guard_of(const Node& test, const Node& if_true, const Node& if_false);

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
    bool nested = false;  // refused for a data-dependent `if` inside a branch (fixed first)
    // Fresh locals a branch changes in place, each with the reads (first bytes) the rewrite
    // turns into a clone: checked by check_fresh once every branch is converted.
    std::map<std::string, std::set<std::uint32_t>> changed_in_place{};
    std::string clone_target{};                  // while `NAME = VALUE` in a branch is checked
    std::set<std::uint32_t> pending_clones{};    // its arguments passed as a clone
    /// A test that shows an index not negative on one branch (IndexGuard), and the subscripts
    /// `X[I]` of that branch a select evaluates on both paths with `I.clamp(min=0)` instead of
    /// `I` (the same value wherever the original evaluates it), by their start.
    std::optional<IndexGuard> index_guard{};
    std::vector<Node> clamped{};

    [[nodiscard]] static bool is_state(const Statement& s) {
        return s.kind == Statement::Rebind || s.kind == Statement::SetAttr || s.kind == Statement::Cache;
    }

    // A branch worth not evaluating when the test does not pick it (torch.cond).
    [[nodiscard]] bool costly() const { return calls_submodule || calls >= 8; }

    // --- purity.cpp
    // Why a branch's expression cannot be evaluated on both paths, or "": impurity(), and a
    // read of tensor data into Python (`.item()`, `.tolist()`, `int(t)`, `float(t)`,
    // `bool(t)`) or a boolean-mask index, which break the graph themselves: a select would
    // run them on the path the `if` did not take too, adding a break there.
    std::string branch_impurity(const Node& expr);
    // Why an expression is not known to be pure, or "": a call not known to be pure, or,
    // unless `always_run` (the `if` test, which the original evaluates too), an op that
    // raises for the values of an operand (value_raise).
    std::string impurity(const Node& expr, bool always_run = false);
    // Why `n`, evaluated on the path the original did not take, may raise there, or "": an
    // op of knowledge::value_raising_ops (an integer division by a tensor that is not a
    // nonzero literal, an index op or a subscript with a tensor index, nn.Embedding) whose
    // deciding operand is a tensor. `file` holds `n`.
    std::string value_raise(const Node& n, std::size_t file);
    // True (and `n` joins `clamped`) when `n`, a subscript `X[I]` inside the guarded branch of
    // index_guard, may run on both paths as `_graphmend_index(X, I)` (the runtime clamps an
    // integer I at 0): X and I are names or attribute chains (`selectable` reads them again).
    // (guarded_index.cpp, with clamped_text and selectable_argument.)
    bool clamp_index(const Node& n, const Node& index, std::size_t file);
    // The text of `part` with its `clamped` subscripts as `_graphmend_index(X, I)`.
    [[nodiscard]] std::string clamped_text(const Node& part) const;
    // `, selectable=lambda: _graphmend_indexable(X, I)` for the clamped subscripts: the runtime
    // keeps the `if` where X is empty or I no integer tensor (the other path would raise).
    [[nodiscard]] std::string selectable_argument() const;
    // Why a project function's body is not known to be pure, or "": it binds only its own
    // names, and every call in it is pure (project functions are followed `depth` deep).
    // With `mutates`, an in-place op on a parameter (`x.masked_fill_(...)`, `x[i] = v`) that the
    // function has not rebound is not impure: the parameter's name is added to it.
    std::string function_impurity(const analysis::FunctionRef& ref, int depth,
                                  std::set<std::string>* mutates = nullptr);
    // A call of `callee`, which changes the parameters `mutated` in place, in `NAME = ...` of a
    // branch: each such argument must be NAME, a fresh local (passed as a clone, and rebound
    // by the statement), or a new tensor the call makes (`v * 2`). Why not, or "".
    std::string clone_arguments(const Node& call, const analysis::FunctionRef& callee,
                                const std::set<std::string>& mutated);

    // --- fresh_locals.cpp
    // Why `expr` may not be a new tensor that nothing else refers to, or "": a factory (not
    // requiring grad), an operator, a pure op, a submodule making a new tensor, or a view of
    // such a value (not a name).
    std::string fresh_value(const Node& expr) const;
    // True when the read `n` of a local makes no reference to its tensor: an operand, the
    // receiver of a pure op that is no view, a shape query.
    bool non_aliasing_read(const Node& n) const;
    // Why the local `name` may be referred to by something else when the `if` changes it in
    // place, or "": it is assigned once before the `if`, on every path and outside any loop
    // around it, a fresh_value; between, and in the `if` (but at `changed`, the reads the
    // rewrite clones), it is only read without a reference being kept.
    std::string fresh_local(const std::string& name, const std::set<std::uint32_t>& changed) const;
    // fresh_local for each of changed_in_place, or "".
    std::string check_fresh() const;
    // Why a call is not known to be pure, or "" (project functions followed when `follow`).
    std::string call_impurity(const Node& call, bool follow = true);
    // `NAME(...)` of a function defined once in the site's function before the `if` (a
    // closure: `def _compute_rect(): ...` in forward), or nullopt; `why` when the closure
    // reads a name that a branch assigns.
    std::optional<analysis::FunctionRef> local_function(const Node& call, std::string& why) const;
    static std::string enclosing_class(const Node& fn);

    // --- branches.cpp
    // Why a block cannot become a lambda, or "". Fills `out`.
    std::string convert(const Node& block, Branch& out) { return convert(block.named_children(), out); }
    std::string convert(const std::vector<Node>& statements, Branch& out);
    // `if not hasattr(self, "NAME"): self.NAME = MAKE` or `self.NAME, other = MAKE`: a
    // cache filled once. Sets `why` when the statement has that shape but cannot be taken.
    std::optional<Statement> cache_statement(const Node& stmt, std::string& why);

private:
    // One statement of a branch appended to `out`, or why it cannot be.
    std::string convert_statement(const Node& stmt, Branch& out);
    std::string convert_return(const Node& stmt, Branch& out);
    std::string convert_check(const Node& stmt, Branch& out);
    // The forms of an expression statement `e`: each answers nullopt when `e` does not
    // have its shape, else why it is refused or "" when it was appended to `out`.
    std::optional<std::string> rebind(const Node& e, Branch& out);
    std::optional<std::string> set_attr(const Node& e, Branch& out);
    std::optional<std::string> update(const Node& e, Branch& out);
    std::optional<std::string> in_place_call(const Node& e, Branch& out);
    std::optional<std::string> effect(const Node& e, Branch& out);
    std::string assignment(const Node& e, Branch& out);
};

/// The __init__ of the class around `function`, or an invalid node.
Node init_of(const Context& ctx, const Node& function);

/// self.NAME = <torch.nn class>(...) in the __init__ of the class of `function`.
std::map<std::string, std::string> submodules_of(const Context& ctx, const Node& function);

/// The buffers of the class of `function`: self.register_buffer("NAME", ...) in __init__.
std::set<std::string> buffers_of(const Context& ctx, const Node& function);

/// A GM201 site over `n` (an if_statement or a conditional_expression) with test `test`.
Site new_site(const Node& n, std::string_view test);

/// `if TEST: continue` (no elif/else) in a loop's body, TEST data-dependent (loop_skip.cpp): `site`
/// fixed as an active mask gating the rest of the iteration, or refused with the reason; nullopt
/// when `stmt` is not such a guard.
std::optional<Site> loop_skip_site(const Context& ctx, const Node& stmt, const Node& def, Site site);

/// The site of a data-dependent if/elif/else statement (statement.cpp).
Site site_for(const Context& ctx, const Node& stmt, const Node& def, const Scope& scope);

/// What site_for learns about an if/elif/else, one step after the other.
struct Plan {
    std::vector<Branch> branches;
    bool has_else = false;
    std::uint32_t span_end = 0;     // the end of the text rewritten (past the `if` with an early return)
    bool all_return = false;
    bool any_return = false;
    std::vector<Statement> updates;  // buffer counters, taken out of the branch
    std::vector<std::string> live;   // names the branches assign that the code after the `if` reads
    bool has_checks = false;
    std::string first_pred;          // the first test as the call evaluates it
    std::string hoisted;             // the call every branch ended in, made once after the select
    std::string truth;               // the live name set to True/False in a branch, only ever
                                     // tested for truth: selected as a one-element bool tensor
};

// --- live_names.cpp: a step of site_for
/// The names the branches assign that the code after the `if` reads, into plan.live (each
/// with a value on every path, and none a Python constant unless plan.truth takes it), or why
/// not.
std::string find_live(const Context& ctx, const Node& def, const Scope& scope, Plan& plan);

// --- hoisting.cpp: a step of site_for
/// `if/elif/else` whose every branch ends in the same in-place call on the same target
/// (`param.add_(A, alpha=-1.0)` / `param.add_(B, alpha=-1.0)`), differing only in arguments
/// the branches may evaluate when not taken: fills `plan` with the branches (their other
/// statements, then one Assign per differing argument to a temporary, live after the `if`) and
/// plan.hoisted with the call on the temporaries, and answers "". Why it cannot be hoisted
/// when the statement has that shape; nullopt when it does not.
std::optional<std::string> hoist_common_call(Checker& checker, const Node& stmt, const Scope& scope, Plan& plan);

// --- layout.cpp, none_paths.cpp: steps of site_for
/// The live name (or, with every branch returning, the returned value) whose branch values
/// the text does not show to share a layout, or "" when every one does.
std::string unshown_layout(const Context& ctx, const Plan& plan);
/// Why a live name may be None where the `if` leaves it as it was while a branch sets it to a
/// value ("" when none is): the select would keep the graph break.
std::string none_on_a_path(const Node& stmt, const Plan& plan);

// --- emission.cpp

/// The expression a branch lambda returns: the live values (assignment form) or the
/// returned value (return form), with assignments the result depends on bound by `:=`
/// to `_graphmend_NAME` names.
std::string branch_value(const Branch& b, const std::vector<std::string>& live);

/// The values that some branch reads and another does not, which may carry gradients
/// (tensors, modules, or of unknown kind), sorted. Under a select the branch not taken still
/// gets a (zero) gradient, where the `if` left `grad` as None; so the runtime keeps the `if`
/// (and its break) when grad mode is on and one of these requires grad. `reads[i]` are the
/// expressions branch i evaluates; `implicit`, the names an `if` without else leaves as they
/// were (its false branch reads them).
std::vector<std::string> one_sided_reads(const Context& ctx, const Scope& scope, const std::vector<Branch>& branches,
                                         const std::vector<std::vector<Node>>& reads,
                                         const std::vector<std::string>& implicit);
/// `, only=lambda: (A, self.B,)` for one_sided_reads's names ("" for none).
std::string only_argument(const std::vector<std::string>& names);

/// The condition (rules::Fix::condition) under which a select removes the `if`'s break, in
/// the user's terms: "" when it always does. `grad_unsafe`: grad_safe=False (a branch can make
/// inf/NaN gradients); `one_sided`: one_sided_reads's names; `layouts`: "" or the clause on the
/// branch values whose shape, dtype and device the code does not show to agree.
std::string select_condition(bool grad_unsafe, const std::vector<std::string>& one_sided, const std::string& layouts);

/// The call's pieces joined with line breaks where the statement had them (at most one
/// per piece, then before the closing ')'), the statement's comments on lines of their
/// own inside the parentheses, and blank lines until the line count is the original's:
/// code below the statement keeps its line numbers. `after`, a statement of its own below the
/// call (a call hoisted out of every branch), takes one of those lines.
std::string layout(const Node& stmt, std::uint32_t end, const std::vector<std::string>& pieces,
                   const std::string& after = "");

}  // namespace graphmend::rules::control_flow

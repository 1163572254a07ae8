// graphmend value analysis: what kind of value each expression of the compiled scope
// holds, and whether a Python value was read out of tensor data.
//
// A rule asks this instead of matching spellings: `if rho_t > 5.0:` is a data-dependent
// test when `rho_t` was computed by arithmetic from a tensor argument, `if not
// self.in_bounds(a):` is one when `in_bounds` returns a tensor, and `hits = x.sum().item()`
// makes `hits` a Python number read from data (its graph break, GB0124, sits on the
// `.item()` line, not on the test).
//
// The analysis is flow-insensitive inside a function (a name's value is the join of
// every value assigned to it), except that a read reached by exactly one plain assignment
// on every path takes that assignment's value (liveness.hpp, reaching_assignments); it is
// interprocedural within a project: a parameter's value
// is the join of the arguments at every in-scope call site, plus what its annotation or
// default says; a call of a project function or method, or of a project nn.Module,
// takes the callee's return value. `forward`'s parameters without annotation or default
// are tensors ("forward's tensor arguments are data"). Everything is computed in the
// constructor; afterwards a Values object is immutable and may be queried from several
// threads. Positions are the nodes of the project's trees (byte offsets into each file's
// original UTF-8 text).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

/// What a test is while Dynamo traces, when its first operand settles it: true for a call
/// of `is_compiling()` (torch.compiler's, torch._dynamo's, transformers'
/// `is_torchdynamo_compiling`, `is_dynamo_compiling`: by name, without arguments), false for
/// `torch.jit.is_scripting()` and `torch.jit.is_tracing()`, through `not`, parentheses,
/// and `and`/`or` whose left operand settles them (`not is_compiling() and x.any()` is false: `x.any()` never runs). nullopt
/// otherwise.
std::optional<bool> value_when_traced(const syntax::Node& test);

/// The parts of an `if` statement that Dynamo never traces, by its test (value_when_traced):
/// the test and the consequence when it is false, the test and every elif/else clause when
/// it is true. Empty for any other node.
std::vector<syntax::Node> untraced_parts(const syntax::Node& if_statement);

/// The kinds a value may have: a set of these bits.
enum Kind : std::uint16_t {
    kTensor = 1,
    kNumber = 2,   // int / float / complex
    kBool = 4,
    kNone = 8,
    kStr = 16,
    kSize = 32,    // torch.Size or a shape tuple
    kModule = 64,  // an nn.Module
    kSeq = 128,    // tuple / list / other container
    kOther = 256,  // dtype, device, a Python module, a class, a function ...
    kUnknown = 512,
};

/// The abstract value of an expression. `kinds` == 0 is "no value seen yet".
struct Value {
    std::uint16_t kinds = 0;
    /// A Python value (number, bool, list) read out of tensor data: `.item()`, `.tolist()`,
    /// `float(t)`, `bool(t)`, and what is computed from them.
    bool data = false;
    /// A tuple's elements, when every producer gave a tuple of this length.
    std::vector<Value> items;
    /// kModule: the class, "torch.nn.Linear" or "FILE:Class" for a project class.
    std::string cls;

    [[nodiscard]] bool tensor() const { return (kinds & kTensor) != 0; }
    [[nodiscard]] bool only(std::uint16_t k) const { return kinds != 0 && (kinds & ~k) == 0; }
    bool operator==(const Value&) const = default;

    static Value of(std::uint16_t k, bool data = false) { return Value{k, data, {}, {}}; }
};

/// The least value holding both.
Value join(const Value& a, const Value& b);

/// A one-line description of a value's kinds ("tensor", "None or tensor", ...).
std::string describe(const Value& v);

class Values {
public:
    /// Analyses every in-scope function of `project` (which must outlive this object).
    explicit Values(const Project& project);

    /// The value of `expr`, an expression inside `file` (evaluated in its enclosing
    /// function's environment; outside any analysed function, from its spelling alone).
    [[nodiscard]] Value eval(std::size_t file, const syntax::Node& expr) const;

    /// True when taking the truth value of `test` reads tensor data: it holds a tensor
    /// (Python calls `bool()` on it: GB0170) or a Python value read from data. Identity
    /// tests (`is`, `is not`), `isinstance` / `hasattr` and shapes are static.
    [[nodiscard]] bool data_test(std::size_t file, const syntax::Node& test) const;
    /// True when Dynamo reported a data-dependent branch (GB0170) on a line of `test` in the
    /// original run (SourceFile::data_tests, passed by `graphmend verify`): data_test holds there.
    [[nodiscard]] bool dynamo_data_test(std::size_t file, const syntax::Node& test) const;
    /// True when Dynamo reported reading a tensor's value into Python (GB0124, GB0109) on a line
    /// of `expr` in the original run (SourceFile::data_reads, passed by `graphmend verify`).
    [[nodiscard]] bool dynamo_data_read(std::size_t file, const syntax::Node& expr) const;
    /// True when Dynamo reported a data-dependent operator (GB0033) on a line of `expr` in the
    /// original run (SourceFile::data_operators, passed by `graphmend verify`).
    [[nodiscard]] bool dynamo_data_operator(std::size_t file, const syntax::Node& expr) const;

    /// Why the truth value of `test` cannot be told, "" when it can: the test calls a parameter
    /// of its function (`if check(x):`), or reads a name the function assigns from such a call
    /// (`flag = check(x)`), and the call sites in scope pass different functions for it, or
    /// one the analysis does not know, so the test may read tensor data. (Where every call
    /// site passes one known function, the call has that function's value; where they pass
    /// several known functions none of which returns a tensor, data or an unknown value, the
    /// test is static.)
    [[nodiscard]] std::string unsettled_callable(std::size_t file, const syntax::Node& test) const;

    /// The locals of the function around `node` read by `node` that hold a Python value
    /// read out of tensor data (`.item()` and the like), not a tensor.
    [[nodiscard]] std::vector<std::string> data_scalars(std::size_t file, const syntax::Node& node) const;

    /// True when `id`, a read of a name, lies where an isinstance test shows it is no tensor
    /// (`elif isinstance(data, (float, int)):`, the else of `if isinstance(x, torch.Tensor):`).
    [[nodiscard]] bool narrowed_to_python(std::size_t file, const syntax::Node& id) const;

    /// The project function or method a call runs, as the analysis resolves it: a function,
    /// `self.m(...)`, or a call of a project module (`self.layer(...)`: its class's forward).
    /// Works in functions outside the compiled scope too (their class is the owner).
    /// `enclosing`, when given, is the function_definition around the call (found otherwise).
    [[nodiscard]] std::optional<FunctionRef> callee(std::size_t file, const syntax::Node& call,
                                                    const syntax::Node& enclosing = {}) const;

private:
    struct Summary {
        std::size_t file = 0;
        syntax::Node fn;
        std::string owner;  // the class the function is a method of, or ""
        std::vector<std::string> params;
        std::map<std::string, Value> env;
        std::set<std::string> locals;  // every name the function binds
        Value ret;
        // The body's nodes the fixed point visits, each list in the walk's order, found once
        // (a body is visited up to 4 times per round and 8 rounds): the bindings and returns
        // (assignments, augmented assignments, named expressions, for statements and
        // clauses, return statements, yields), outside nested functions, classes and lambdas;
        // the calls, outside nested functions and classes (inside lambdas too).
        std::vector<syntax::Node> bindings;
        std::vector<syntax::Node> calls;
        // reaching_assignments(fn): a read's start byte -> the value of the one plain
        // assignment that reaches it. A read found here takes that value, not the name's join.
        std::map<std::uint32_t, syntax::Node> reaching;
        // A read inside `if isinstance(NAME, T):` (or its else): its start byte -> the kinds
        // it may have there.
        std::map<std::uint32_t, std::uint16_t> narrowed;
    };
    struct Frame;  // an evaluation in progress

    void analyse(Summary& s);
    void seed_params(Summary& s);
    /// Reads the attributes of the classes of `file` (`self.NAME = ...` and register_buffer in
    /// __init__: attributes_) and the project module classes their __init__ builds (submodules_).
    void read_attributes(std::size_t file);
    /// A function's summary before the fixed point: its owner class, parameters, locals,
    /// reaching assignments, narrowed reads, and the calls and bindings the fixed point visits.
    [[nodiscard]] static Summary summarise(std::size_t file, const syntax::Node& fn);
    /// The interprocedural fixed point over summaries_: analyse, then pass_arguments, by rounds.
    void solve();
    /// Joins the arguments of every call `caller` makes into the parameters of the analysed
    /// function it calls; inserts into `changed` the file of each callee whose parameters changed.
    void pass_arguments(const Summary& caller, std::set<std::size_t>& changed);
    [[nodiscard]] Value eval_in(const Frame& f, const syntax::Node& e, int depth = 0) const;
    /// The value of each element a `for` over `iterable` binds: a number for `range(...)`, a
    /// tensor for a tensor (its rows), the element of each argument for `zip(...)`, an index
    /// and the element for `enumerate(...)`, the element for `reversed` / `sorted` / `list` /
    /// `tuple`, the body's value for a comprehension, the join of a tuple's items.
    [[nodiscard]] Value element_value(const Frame& f, const syntax::Node& iterable, int depth = 0) const;
    [[nodiscard]] Value eval_name(const Frame& f, const syntax::Node& e, int depth) const;  // an identifier
    [[nodiscard]] Value eval_rest(const Frame& f, const syntax::Node& e, int depth) const;  // the other forms
    [[nodiscard]] Value call_value(const Frame& f, const syntax::Node& call, int depth) const;
    /// A call of a builtin (a name the file neither binds nor imports): call_value's first case.
    [[nodiscard]] Value builtin_value(const Frame& f, const syntax::Node& call, int depth) const;
    /// A call of an attribute (`torch.NAME(...)`, `x.method(...)`) whose value the function or
    /// the receiver tells; nullopt when call_value goes on as for any other call.
    [[nodiscard]] std::optional<Value> method_value(const Frame& f, const syntax::Node& call, int depth) const;
    /// The value of a branch of GM201's select (`lambda: ...`), as the `if` it replaced gave it.
    [[nodiscard]] Value branch_value(const Frame& f, const syntax::Node& lambda, int depth) const;
    [[nodiscard]] Value self_attribute(std::size_t file, const std::string& owner, const std::string& attr) const;
    [[nodiscard]] const Summary* summary_of(std::size_t file, const syntax::Node& fn) const;
    [[nodiscard]] const Summary* callee_of(const Frame& f, const syntax::Node& call, Value* module_value) const;
    /// The one function every call site in scope passes for the parameter `call` calls
    /// (Project::passed_callable), or null.
    [[nodiscard]] const FunctionRef* passed_function(const Frame& f, const syntax::Node& call) const;
    /// The value of `call`, a call of `lambda` (a passed callable): its body, with the lambda's
    /// parameters bound to the call's arguments, in the frame of the function around it.
    [[nodiscard]] Value lambda_value(const Frame& f, const FunctionRef& lambda, const syntax::Node& call, int depth) const;
    [[nodiscard]] std::string dotted_torch(std::size_t file, const syntax::Node& e) const;

    const Project& project_;
    std::map<std::pair<std::size_t, std::uint32_t>, Summary> summaries_;
    std::set<std::pair<std::size_t, std::uint32_t>> called_;  // functions with an analysed caller
    // True during the first fixed point: a parameter of a function with analysed callers that
    // no call has filled yet reads as no value (kinds 0), not as unknown, and so does what is
    // computed from it; joined early, unknown would stay (a callee analysed before its caller
    // took `t[1:]` of "tensor or unknown" as unknown). A second fixed point reads them as
    // unknown, as every query afterwards does.
    bool solving_ = false;
    // Module classes of the project built in some class's __init__ (`self.attn = PreNorm(norm,
    // WindowAttention(...))`): submodules, whose forward a parent calls with arguments the
    // analysis may not see (a call through `self.fn`), so its parameters are not seeded as data.
    std::set<std::pair<std::size_t, std::string>> submodules_;
    // (file, class) -> attribute -> value, from `self.NAME = ...` / register_buffer in __init__.
    std::map<std::pair<std::size_t, std::string>, std::map<std::string, Value>> attributes_;
};

}  // namespace graphmend::analysis

// Row-wise computation (see rowwise.cpp): which expressions compute row by row, and what
// a callable expression names (a module class, a torch callable, a project function).
// Private to the rules that rewrite row subsets (static-expert-dispatch).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graphmend/rule.hpp"

namespace graphmend::rules {

/// The class `function` is a method of, or "".
std::string owner_of(const syntax::Node& function);

/// What a callable expression names.
struct Callable {
    enum Kind { None, Class, External, Activation, Method, Function, ListOf } kind = None;
    std::size_t file = 0;
    std::string cls;       // Class: a project class of `file`
    std::string external;  // External: the dotted name outside the inputs ("torch.nn.Linear")
    syntax::Node function; // Method / Function: the function_definition
    std::shared_ptr<Callable> element;  // ListOf: what each element is
};

/// What `expr` (inside function `def` of `file`, a method of `owner` or "") calls: a
/// local assigned once, `self.NAME` assigned once in the class, an element of a
/// ModuleList built from one class, `C(...)`, ACT2FN[...].
Callable callable_of(const Context& ctx, std::size_t file, const syntax::Node& def, const std::string& owner,
                     const syntax::Node& expr, int depth = 0);

/// Follows which locals hold rows (a tensor with one row per candidate) through the
/// statements of one function. `rows` are such locals; `index` are the index vectors a
/// gather takes rows with (`X[I]`, `X[None, I]`, `W[I, J, None]`).
class RowFlow {
public:
    RowFlow(const Context& ctx, std::size_t file, syntax::Node def, std::string owner, int depth = 0);

    std::set<std::string> rows;
    std::set<std::string> index;
    /// Boolean masks that pick rows: the text of each (a local's name or an expression);
    /// `X[..., M, ...]` with the other indices `loop_var`, integers, `:` or `...` gathers rows.
    std::set<std::string> masks;
    std::string loop_var;
    /// Each gather by a mask seen so far, with the mask's position among its indices.
    std::vector<std::pair<syntax::Node, int>> mask_gathers;
    /// A Dropout was found; it is row-wise only in eval mode (set instead of failing).
    bool needs_eval = false;

    /// Whether `e` holds rows (true), holds none (false), or is not shown row-wise (nullopt,
    /// with why()).
    std::optional<bool> expr(const syntax::Node& e);
    /// `NAME = EXPR` / `NAME op= EXPR`: updates `rows`; false (with why()) when not row-wise.
    bool assignment(const syntax::Node& a);
    /// The statements of a function body: assignments, returns, docstrings and `if`s that
    /// do not test the rows. Whether it returns rows, or nullopt.
    std::optional<bool> block(const syntax::Node& body);
    /// The position of a mask among the indices of subscript `e` when it picks rows by one
    /// (the other indices being `loop_var`, integer literals, `:` or `...`), or -1.
    [[nodiscard]] int mask_position(const syntax::Node& e) const;
    /// Locals bound by the loop to the elements of a module container (`for i, expert in
    /// enumerate(self.experts.values())`): name -> the container expression.
    std::map<std::string, syntax::Node> elements;
    /// True when `e` reads rows other than through their dtype, device or ndim.
    [[nodiscard]] bool reads_row_values(const syntax::Node& e) const;
    /// True when `e` reads a local holding rows or indices.
    [[nodiscard]] bool holds_rows(const syntax::Node& e) const;
    /// The first reason something was not shown row-wise: "line N: ...".
    [[nodiscard]] const std::string& why() const { return why_; }

private:
    bool fail(const syntax::Node& at, std::string why);
    std::optional<bool> subscript(const syntax::Node& e);
    std::optional<bool> call(const syntax::Node& e);
    std::optional<bool> callable(const syntax::Node& e, const Callable& c, const std::vector<bool>& row_args);
    std::optional<bool> function(const syntax::Node& call, std::size_t file, const syntax::Node& fn,
                                 const std::vector<bool>& row_args, bool method);

    const Context& ctx_;
    std::size_t file_;
    syntax::Node def_;
    std::string owner_;
    int depth_;
    std::string why_;
};

}  // namespace graphmend::rules

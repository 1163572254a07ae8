// Row-wise computation (see rowwise.cpp): which expressions compute row by row, and what
// a callable expression names (a module class, a torch callable, a project function).
// Private to the rules that rewrite row subsets (static-expert-dispatch, and in the strict
// mode of row_layout*.cpp static-row-subset).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
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

/// True for the tensor methods and torch / torch.nn.functional functions the row-wise check
/// treats as elementwise (the names after the last dot).
bool is_elementwise_method(std::string_view name);
bool is_elementwise_function(std::string_view name);

/// What `expr` (inside function `def` of `file`, a method of `owner` or "") calls: a
/// local assigned once, `self.NAME` assigned once in the class, an element of a
/// ModuleList built from one class, `C(...)`, ACT2FN[...].
Callable callable_of(const Context& ctx, std::size_t file, const syntax::Node& def, const std::string& owner,
                     const syntax::Node& expr, int depth = 0);

/// `self.NAME` of class `owner` (in `file`) built, in every assignment of the class, as
/// `nn.ModuleList([C(...) for ...])` of one project class C, an element possibly
/// `C(...) if TEST else None` (or `None if TEST else C(...)`: expert parallelism, as in
/// DeepSeek-V2/V3's remote code, which builds the list in both branches of an `if`), and changed
/// nowhere (no append, no item assignment). The element class (a Callable of kind Class), or
/// kind None; `may_hold_none` says whether an element may be None.
Callable modules_or_none(const Context& ctx, std::size_t file, const std::string& owner, const std::string& name,
                         bool& may_hold_none);

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
    /// Lists of slices of the rows (`L = X.split(S, dim=0)`): `L[loop_var]` holds rows.
    std::set<std::string> row_lists;
    /// Expressions that hold rows as they are written, by byte range: the slices `X[A:E]` of
    /// the sorted-slices dispatch, which the static form replaces by every row of X.
    std::set<std::pair<std::uint32_t, std::uint32_t>> row_nodes;
    /// Locals the caller has resolved to what they call (a call of one is checked as a call of it).
    std::map<std::string, Callable> known;
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
    /// True when `e`, which holds no rows, has no effect the static form could repeat: no
    /// random draws, in-place or mutating methods, or calls of project code and modules.
    bool pure(const syntax::Node& e);
    /// True when `e` reads rows other than through their dtype, device or ndim.
    [[nodiscard]] bool reads_row_values(const syntax::Node& e) const;
    /// True when `e` reads a local holding rows or indices.
    [[nodiscard]] bool holds_rows(const syntax::Node& e) const;
    /// The first reason something was not shown row-wise: "line N: ...".
    [[nodiscard]] const std::string& why() const { return why_; }

    // ---- Strict layout (row_layout*.cpp), for the row-subset rule (GM502). ----
    /// A tensor's number of dimensions: exact, a lower bound, or unknown (n < 0).
    struct Rank {
        int n = -1;
        bool exact = false;
        [[nodiscard]] bool known() const { return n >= 0; }
    };
    /// Strict mode: every expression on the rows is shown to keep the rows in dimension 0,
    /// with its rank where it matters (broadcasting, convolutions, pads), counts read from
    /// `.shape` may only size a view or reshape, and modules are reached through `self`.
    bool strict = false;
    /// What an expression holds: no rows, rows, or blocks of rows, and its rank.
    struct Layout {
        bool rows = false;
        bool blocks = false;
        Rank rank;
    };
    std::set<std::string> counts;      // locals holding the row count
    std::set<std::string> block_counts;  // locals holding dimension 0 of blocks
    std::set<std::string> blocks;      // locals whose dimension 0 is the rows times a size
    std::set<std::string> contiguous;  // locals of rows assigned from `.contiguous()`
    std::map<std::string, Rank> ranks; // known ranks of locals, rows or not
    /// For a local of rows: the names unpacked from its `.shape[1:]`, in order.
    std::map<std::string, std::vector<std::string>> dims;
    /// Strict mode: the gathers `X[I, ...]` by one of `index` (I first, the rest basic).
    std::vector<syntax::Node> gathers;
    /// Strict mode: the block the check starts from; rows assigned under an `if` inside it are
    /// refused (the check follows one path).
    syntax::Node root;
    /// The rank `e` was shown to have (strict mode), or unknown.
    [[nodiscard]] Rank rank_of(const syntax::Node& e) const;
    /// True when `e` was shown to hold blocks of rows rather than rows.
    [[nodiscard]] bool is_blocks(const syntax::Node& e) const;
    /// The rank of an expression that holds no rows, from its spelling and `ranks`: Python
    /// numbers 0, slicing, view/reshape, convolutions; unknown otherwise.
    [[nodiscard]] Rank plain_rank(const syntax::Node& e) const;
    /// Strict mode, after the check of `body`: false (with why()) when it calls, outside the
    /// computation on the rows, something that may have an effect (project code, modules,
    /// in-place methods).
    bool strict_effects(const syntax::Node& body);

private:
    bool fail(const syntax::Node& at, std::string why);
    bool chunk_of_rows(const syntax::Node& a);
    std::optional<bool> subscript(const syntax::Node& e);
    std::optional<bool> call(const syntax::Node& e);
    std::optional<bool> callable(const syntax::Node& e, const Callable& c, const std::vector<bool>& row_args);
    std::optional<bool> function(const syntax::Node& call, std::size_t file, const syntax::Node& fn,
                                 const std::vector<bool>& row_args, bool method,
                                 const std::string& owner = {});

    // Strict layout (row_layout*.cpp).
    std::optional<bool> strict_expr(const syntax::Node& e);
    bool strict_assignment(const syntax::Node& a);
    bool strict_shape_read(const syntax::Node& a);
    std::optional<Layout> sub(const syntax::Node& e);
    std::optional<Layout> layout(const syntax::Node& e);
    std::optional<Layout> strict_subscript(const syntax::Node& e);
    std::optional<Layout> strict_operands(const syntax::Node& e, const std::vector<syntax::Node>& operands);
    std::optional<Layout> strict_call(const syntax::Node& e);
    std::optional<Layout> strict_method(const syntax::Node& e, const syntax::Node& recv, const std::string& m);
    std::optional<Layout> strict_view(const syntax::Node& e, const syntax::Node& recv, const std::string& m);
    std::optional<Layout> strict_torch(const syntax::Node& e, std::string_view leaf);
    std::optional<Layout> strict_module(const syntax::Node& e, const Callable& c, const Layout& in);
    std::optional<Layout> strict_function(const syntax::Node& call, std::size_t file, const syntax::Node& fn,
                                          bool method);
    [[nodiscard]] bool count_expr(const syntax::Node& e) const;
    [[nodiscard]] bool conditional(const syntax::Node& n) const;
    void forget(const std::string& name);
    std::optional<bool> note(const syntax::Node& e, const Layout& l);

    std::map<std::pair<std::uint32_t, std::uint32_t>, Rank> node_ranks_;
    std::set<std::pair<std::uint32_t, std::uint32_t>> node_blocks_;
    std::set<std::pair<std::uint32_t, std::uint32_t>> row_calls_;  // calls checked as computation on the rows

    const Context& ctx_;
    std::size_t file_;
    syntax::Node def_;
    std::string owner_;
    int depth_;
    std::string why_;
};

}  // namespace graphmend::rules

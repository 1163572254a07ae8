// Matching expert dispatch by sorted split sizes (see src/rules/gm501_static_expert_dispatch/split_dispatch.hpp).
//
// The static form keeps the sizes a tensor (no `.tolist()`), runs each expert on every row
// instead of on its own slice, and picks for each row the result of the expert whose slice
// holds it. It equals the loop when:
//   - the list `S = T.tolist()` reaches nothing but `X.split(S, dim=0)` calls of consumers:
//     in its own function, or returned from a module's forward and unpacked by the one
//     class that builds that module, then passed to modules whose forward is a consumer;
//   - a consumer splits, runs `O.append(EXPR)` for each index of a `range(...)`, with EXPR
//     row-wise in the slice `L[i]` (rowwise.cpp), and concatenates `torch.cat(O, dim=0)`;
//     the slices, the list of outputs and the loop's index are read nowhere else.
// Each row then goes through the same row-wise operations, and the concatenation puts the
// rows of expert e at the positions its slice held: the positions the static form gives it.
#include "split_dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "graphmend/liveness.hpp"
#include "rules/support/site.hpp"
#include "rules/support/body.hpp"
#include "rules/support/rowwise.hpp"

namespace graphmend::rules {

using syntax::Node;

using body::assignment_of;
using body::inside;
using body::occurrences;
using body::statements;

namespace {

// The positional parameters of a method, `self` first; empty when it has *args, **kwargs or
// parameters that are not plain names.
std::vector<std::string> plain_parameters(const Node& def) {
    std::vector<std::string> out;
    for (const Node& p : def.field("parameters").named_children()) {
        if (p.is("identifier")) {
            out.push_back(text(p));
        } else if (p.is("comment")) {
            continue;
        } else {
            return {};
        }
    }
    return out;
}

// `X.split(S, dim=0)`, `X.split(S, 0)`, `torch.split(X, S, dim=0)` / `(X, S, 0)`: X and S.
std::optional<std::pair<Node, Node>> split_call(const Context& ctx, std::size_t file, const Node& e) {
    const Node call = syntax::without_parens(e);
    if (!call.is("call")) return std::nullopt;
    const Node fn = call.field("function");
    auto args = call.field("arguments").named_children();
    args.erase(std::remove_if(args.begin(), args.end(), [](const Node& a) { return a.is("comment"); }), args.end());
    auto dim0 = [](const Node& a) {
        return a.text() == "0" || (a.is("keyword_argument") && a.field("name").text() == "dim" &&
                                   a.field("value").text() == "0");
    };
    if (ctx.project.external_name(file, fn) == "torch.split") {
        if (args.size() == 3 && !args[0].is("keyword_argument") && !args[1].is("keyword_argument") && dim0(args[2])) {
            return std::make_pair(args[0], args[1]);
        }
        return std::nullopt;
    }
    if (fn.is("attribute") && fn.field("attribute").text() == "split" && args.size() == 2 &&
        !args[0].is("keyword_argument") && dim0(args[1]) && ctx.project.external_name(file, fn).empty()) {
        return std::make_pair(fn.field("object"), args[0]);
    }
    return std::nullopt;
}

class Matcher {
public:
    Matcher(const Context& ctx, SplitDispatch& d) : ctx_(ctx), d_(d) {}

    bool refuse(std::string why) {
        if (d_.refused.empty()) d_.refused = std::move(why);
        return false;
    }

    // Every read of `name` in `def` after `from` (a statement of its body, top level):
    // consumers' splits, module calls whose forward is a consumer, and (when `returned` is
    // given) the function's one return. Sets `reached` when a split is found.
    bool uses(const Node& def, const std::string& owner, const Node& from, const std::string& name, bool may_return) {
        bool ok = true;  // after a refusal the reads are still followed, to find the splits
        Node first;      // the first read after `from`
        std::string first_rows;  // when it is passed on by a module call: the rows' name
        for (const Node& n : occurrences(def, name)) {
            if (n.end() <= from.end()) {
                if (inside(n, from)) continue;
                // Before the statement: the tensor, or a loop around it would read the list.
                for (Node p = from.parent(); p && !(p == def); p = p.parent()) {
                    if ((p.is("for_statement") || p.is("while_statement")) && inside(n, p)) {
                        ok = refuse(fmt::format("line {}: `{}` is read in a loop around where the sizes are read out",
                                                n.position().line, name));
                    }
                }
                continue;
            }
            if (body::bound_here(n)) {
                ok = refuse(fmt::format("line {}: `{}` is assigned again", n.position().line, name));
                continue;
            }
            const bool is_first = !first;
            if (is_first) first = n;
            const Node p = n.parent();
            if (p.is("argument_list")) {
                const Node call = p.parent();
                if (const auto s = split_call(ctx_, ctx_.file, call); s && s->second == n) {  // a split here
                    ok = consumer(def, owner, call, name) && ok;
                    continue;
                }
                if (call.field("function").is("attribute") && call.field("function").field("object").text() == "self") {
                    std::string rows;
                    ok = module_call(def, owner, call, n, rows) && ok;
                    if (is_first) first_rows = rows;
                    continue;
                }
            }
            if (may_return && returned_at(def, n) >= 0) {
                ok = callers(def, owner, returned_at(def, n)) && ok;
                continue;
            }
            ok = refuse(fmt::format("line {}: the sizes are read as a list by `{}`", n.position().line,
                                    one_line(first_line(statement_of(n)))));
        }
        // The first module call that passes the sizes on chooses the form (and reads the list out
        // when it is not taken) for every later use: it must run before all of them, always.
        if (ok && first && !first_rows.empty()) {
            if (!(statement_of(first).parent() == def.field("body"))) {
                return refuse(fmt::format("line {}: the sizes are first passed on inside a block",
                                          first.position().line));
            }
            d_.choices.push_back({first, first_rows});
        }
        return ok;
    }

    bool reached = false;

private:
    static Node statement_of(const Node& n) {
        Node s = n;
        while (s.parent() && !s.parent().is("block") && !s.parent().is("module")) s = s.parent();
        return s;
    }

    static std::string first_line(const Node& s) {
        const std::string_view t = s.text();
        return std::string(t.substr(0, t.find('\n')));
    }

    // The position of `n` in `return a, b, n, c`, when that is the function's only return
    // and its last statement; -1 otherwise.
    static int returned_at(const Node& def, const Node& n) {
        const Node list = n.parent();
        const Node ret = list.is("expression_list") ? list.parent() : Node();
        if (!ret || !ret.is("return_statement")) return -1;
        const auto body = statements(def.field("body"));
        if (body.empty() || !(body.back() == ret)) return -1;
        int returns = 0;
        syntax::walk(def.field("body"), [&](const Node& m) {
            if (m.is("function_definition") || m.is("class_definition") || m.is("lambda")) return false;
            if (m.is("return_statement") || m.is("yield")) ++returns;
            return true;
        });
        if (returns != 1) return -1;
        int i = 0;
        for (const Node& e : list.named_children()) {
            if (e.is("comment")) continue;
            if (e == n) return i;
            ++i;
        }
        return -1;
    }

    // `self.NAME(..., n, ...)` with self.NAME a module whose forward is a consumer of that parameter.
    bool module_call(const Node& def, const std::string& owner, const Node& call, const Node& n, std::string& rows) {
        const Node fn = call.field("function");
        const Callable c = callable_of(ctx_, ctx_.file, def, owner, fn);
        if (c.kind != Callable::Class || c.file != ctx_.file) {
            return refuse(fmt::format("line {}: `{}` is not shown to be a module of this file", call.position().line,
                                      fn.text()));
        }
        const auto fwd = ctx_.project.find_method(c.file, c.cls, "forward");
        if (!fwd || fwd->file != ctx_.file) return refuse(fmt::format("`{}` has no forward in this file", c.cls));
        int pos = 0;
        for (const Node& a : call.field("arguments").named_children()) {
            if (a.is("comment")) continue;
            if (a.is("keyword_argument") || a.is("list_splat") || a.is("dictionary_splat")) {
                return refuse(fmt::format("line {}: `{}` takes keyword or unpacked arguments", call.position().line,
                                          fn.text()));
            }
            if (a == n) break;
            ++pos;
        }
        const auto params = plain_parameters(fwd->node);
        if (params.size() < 2 || static_cast<std::size_t>(pos) + 1 >= params.size()) {
            return refuse(fmt::format("{}.forward's parameters are not plain names", c.cls));
        }
        const std::string param = params[pos + 1];
        bool ok = true;
        // Every read of the parameter is the split of a consumer.
        std::size_t splits = 0;
        for (const Node& o : occurrences(fwd->node, param)) {
            const Node call2 = o.parent().is("argument_list") ? o.parent().parent() : Node();
            const auto s = call2 ? split_call(ctx_, ctx_.file, call2) : std::nullopt;
            if (body::bound_here(o) || !s || !(s->second == o)) {
                return refuse(fmt::format("line {}: {}.forward reads `{}` other than in a split", o.position().line,
                                          c.cls, param));
            }
            ++splits;
            ok = consumer(fwd->node, c.cls, call2, param) && ok;
        }
        if (splits == 0) return refuse(fmt::format("{}.forward does not split by `{}`", c.cls, param));
        // The rows the consumer splits: a parameter, passed here as a name.
        for (const SplitConsumer& sc : d_.consumers) {
            if (!(sc.def == fwd->node)) continue;
            const auto at = std::find(params.begin(), params.end(), sc.input);
            const auto args = call.field("arguments").named_children();
            std::vector<Node> positional;
            for (const Node& a : args) {
                if (!a.is("comment")) positional.push_back(a);
            }
            const std::size_t q = static_cast<std::size_t>(at - params.begin());
            if (at == params.end() || q == 0 || q - 1 >= positional.size() || !positional[q - 1].is("identifier")) {
                return refuse(fmt::format("line {}: the rows {}.forward splits are not a parameter passed as a name",
                                          call.position().line, c.cls));
            }
            rows = text(positional[q - 1]);
            break;
        }
        return ok;
    }

    // Every place the one class that builds module class `owner` unpacks what its forward
    // returns; the value at `pos` must reach only consumers.
    bool callers(const Node& def, const std::string& owner, int pos) {
        if (owner.empty() || def.field("name").text() != "forward") {
            return refuse("the sizes are returned from a function that is not a module's forward");
        }
        // Every mention of the class in the project: one `self.NAME = Owner(...)` in this file.
        std::vector<Node> builds;
        for (std::size_t f = 0; f < ctx_.project.files().size(); ++f) {
            if (!ctx_.project.visible(f, ctx_.file)) continue;  // another folder project's class of that name
            // A file none of whose words is the name has no mention of the class: no walk.
            if (!analysis::mentions(ctx_.project.files()[f], owner)) continue;
            bool other = false;
            syntax::walk(ctx_.project.tree_of(f).root(), [&](const Node& n) {
                if (!n.is("identifier") || n.text() != owner) return true;
                const Node p = n.parent();
                if (p.is("class_definition") && p.field("name") == n && f == ctx_.file) return true;
                if (p.is("call") && p.field("function") == n && f == ctx_.file && p.parent().is("assignment") &&
                    p.parent().field("right") == p && p.parent().field("left").is("attribute") &&
                    p.parent().field("left").field("object").text() == "self") {
                    builds.push_back(p.parent());
                    return true;
                }
                other = true;
                return true;
            });
            if (other) {
                return refuse(fmt::format("`{}` is named other than in `self.NAME = {}(...)` ({})", owner, owner,
                                          ctx_.project.files()[f].path));
            }
        }
        if (builds.empty()) return refuse(fmt::format("no `self.NAME = {}(...)` builds the module", owner));
        bool ok = true;
        for (const Node& b : builds) {
            const Node init = analysis::enclosing_function(b);
            const std::string cls = init ? owner_of(init) : std::string();
            if (cls.empty()) return refuse(fmt::format("line {}: built outside a method", b.position().line));
            const std::string attr = text(b.field("left").field("attribute"));
            const auto* info = &ctx_.source().index.classes;
            const auto it = info->find(cls);
            if (it == info->end()) return refuse(fmt::format("`{}` is not a class of this file", cls));
            // Every `.ATTR` of the file: in a class that builds the module as ATTR, the build or
            // `A, B, ... = self.ATTR(...)`.
            auto builder = [&](const Node& n) {
                for (const Node& o : builds) {
                    const Node fn = analysis::enclosing_function(o);
                    const auto c = fn ? info->find(owner_of(fn)) : info->end();
                    if (c != info->end() && inside(n, c->second.node) && o.field("left").field("attribute").text() == attr) {
                        return true;
                    }
                }
                return false;
            };
            std::vector<Node> calls;
            syntax::walk(it->second.node, [&](const Node& n) {
                if (!ok) return false;
                if (!n.is("attribute") || n.field("attribute").text() != attr) return true;
                if (n.field("object").text() != "self") {
                    ok = refuse(fmt::format("line {}: `{}` is read on another object", n.position().line, n.text()));
                    return false;
                }
                if (n == b.field("left")) return true;
                const Node call = n.parent();
                const Node a = call.parent();
                if (!call.is("call") || !(call.field("function") == n) || !a.is("assignment") ||
                    !(a.field("right") == call) ||
                    !(a.field("left").is("pattern_list") || a.field("left").is("tuple_pattern")) ||
                    !a.parent().is("expression_statement") || !a.parent().parent().is("block")) {
                    ok = refuse(fmt::format("line {}: `{}` is used other than as `A, B, ... = {}(...)`",
                                            n.position().line, n.text(), n.text()));
                    return false;
                }
                calls.push_back(a);
                return true;
            });
            syntax::walk(ctx_.source().tree.root(), [&](const Node& n) {
                if (!ok) return false;
                if (n.is("attribute") && n.field("attribute").text() == attr &&
                    !(n.field("object").text() == "self" && builder(n))) {
                    ok = refuse(fmt::format("line {}: `{}` is read outside the classes that build {}",
                                            n.position().line, n.text(), owner));
                }
                return ok;
            });
            for (const Node& a : calls) {
                const auto targets = a.field("left").named_children();
                if (static_cast<std::size_t>(pos) >= targets.size() || !targets[pos].is("identifier")) {
                    return refuse(fmt::format("line {}: the sizes are not unpacked into a name", a.position().line));
                }
                const Node caller = analysis::enclosing_function(a);
                ok = uses(caller, cls, a.parent(), text(targets[pos]), false) && ok;
            }
        }
        return ok;
    }

    // The consumer of `split` (a call in `def`'s body): split, loop of appends, cat.
    bool consumer(const Node& def, const std::string& owner, const Node& split, const std::string& sizes) {
        for (const SplitConsumer& c : d_.consumers) {
            if (c.split == split) return true;
        }
        const Node a = split.parent();
        const Node stmt = a.parent();
        const std::size_t line = split.position().line;
        if (!a.is("assignment") || !(a.field("right") == split) || !a.field("left").is("identifier") ||
            !stmt.is("expression_statement") || !(stmt.parent() == def.field("body"))) {
            return refuse(fmt::format("line {}: the split is not `L = X.split(S, dim=0)` in the function's body", line));
        }
        const std::string list = text(a.field("left"));
        const auto body = statements(def.field("body"));
        std::size_t at = 0;
        while (at < body.size() && !(body[at] == stmt)) ++at;
        // `O = []` just before or after the split, then the loop, then `R = torch.cat(O, dim=0)`.
        auto empty_list = [&](std::size_t i) -> std::string {
            const Node e = i < body.size() ? assignment_of(body[i]) : Node();
            if (e && e.field("left").is("identifier") && e.field("right").is("list") &&
                e.field("right").named_children().empty()) {
                return text(e.field("left"));
            }
            return "";
        };
        std::string outputs = empty_list(at + 1);
        std::size_t loop_at = at + 2;
        if (outputs.empty() && at > 0) {
            outputs = empty_list(at - 1);
            loop_at = at + 1;
        }
        if (outputs.empty() || loop_at + 1 >= body.size() || !body[loop_at].is("for_statement")) {
            return refuse(fmt::format("line {}: the split is not followed by `O = []` and a loop over the experts",
                                      line));
        }
        const Node loop = body[loop_at];
        const Node iter = loop.field("right");
        if (!loop.field("left").is("identifier") || !iter.is("call") || iter.field("function").text() != "range" ||
            loop.named_children().back().is("else_clause")) {
            return refuse(fmt::format("line {}: the loop is not `for i in range(...)`", loop.position().line));
        }
        const std::string index = text(loop.field("left"));
        const auto loop_body = statements(loop.field("body"));
        const Node append = loop_body.size() == 1 && loop_body[0].is("expression_statement") &&
                                    loop_body[0].named_children().size() == 1
                                ? loop_body[0].named_children()[0]
                                : Node();
        if (!append || !append.is("call") || append.field("function").text() != outputs + ".append" ||
            append.field("arguments").named_children().size() != 1 ||
            append.field("arguments").named_children()[0].is("keyword_argument")) {
            return refuse(fmt::format("line {}: the loop's body is not `{}.append(EXPR)`", loop.position().line,
                                      outputs));
        }
        // From here on the form is an expert dispatch by split sizes: refusals are its own.
        reached = true;
        const Node value = append.field("arguments").named_children()[0];
        const Node cat_stmt = body[loop_at + 1];
        // The statement after the loop concatenates the outputs (the result may go anywhere).
        Node cat;
        Node cat_list;
        syntax::walk(cat_stmt, [&](const Node& n) {
            if (cat || n.is("lambda")) return false;
            if (const Node l = body::cat_of(ctx_, ctx_.file, n); l && l.text() == outputs) {
                cat = n;
                cat_list = l;
            }
            return !cat;
        });
        if (!cat) {
            return refuse(fmt::format("line {}: the loop is not followed by `torch.cat({}, dim=0)`",
                                      cat_stmt.position().line, outputs));
        }
        // The slices, the outputs and the index: read nowhere else.
        for (const Node& o : occurrences(def, list)) {
            if (o == a.field("left")) continue;
            const Node p = o.parent();
            if (!inside(o, value) || !p.is("subscript") || !(p.field("value") == o) ||
                p.field("subscript").text() != index || p.named_children().size() != 2) {
                return refuse(fmt::format("line {}: `{}` is read other than as `{}[{}]` in the loop",
                                          o.position().line, list, list, index));
            }
        }
        for (const Node& o : occurrences(def, outputs)) {
            if (o == append.field("function").field("object") || o == cat_list ||
                o == assignment_of(body[loop_at == at + 2 ? at + 1 : at - 1]).field("left")) {
                continue;
            }
            return refuse(fmt::format("line {}: `{}` is used other than by the loop and the concatenation",
                                      o.position().line, outputs));
        }
        for (const Node& o : occurrences(def, index)) {
            if (!inside(o, loop)) {
                return refuse(fmt::format("line {}: the loop's index `{}` is read after the loop", o.position().line,
                                          index));
            }
        }
        // The computation on each slice: row by row.
        RowFlow flow(ctx_, ctx_.file, def, owner);
        flow.loop_var = index;
        flow.row_lists.insert(list);
        const auto v = flow.expr(value);
        if (!v) return refuse(flow.why());
        if (!*v) return refuse(fmt::format("line {}: the loop's result does not hold the rows", append.position().line));
        if (flow.needs_eval) {
            return refuse(fmt::format("line {}: a Dropout on the rows (it draws a number per element in training)",
                                      append.position().line));
        }
        if (flow.holds_rows(iter)) return refuse("the loop's range reads the rows");
        const auto s = split_call(ctx_, ctx_.file, split);
        d_.consumers.push_back({def, split, a, list, cat, text(s->first), sizes, outputs});
        return true;
    }

    const Context& ctx_;
    SplitDispatch& d_;
};

}  // namespace

std::optional<SplitDispatch> match_split_dispatch(const Context& ctx, const Node& def, const Node& stmt) {
    const Node a = assignment_of(stmt);
    if (!a || !a.field("left").is("identifier")) return std::nullopt;
    const Node call = syntax::without_parens(a.field("right"));
    if (!call.is("call") || !call.field("function").is("attribute") ||
        call.field("function").field("attribute").text() != "tolist" ||
        !call.field("arguments").named_children().empty()) {
        return std::nullopt;
    }
    SplitDispatch d;
    d.assignment = a;
    d.tolist = call;
    d.tensor = text(call.field("function").field("object"));
    const std::string name = text(a.field("left"));
    Matcher m(ctx, d);
    const bool top = stmt.parent() == def.field("body");
    const bool ok = m.uses(def, owner_of(def), stmt, name, true);
    if (!m.reached) return std::nullopt;  // no split reached: not this form
    if (ok && !top) m.refuse("the sizes are read out inside a block, not at the top of the function");
    std::sort(d.consumers.begin(), d.consumers.end(),
              [](const SplitConsumer& x, const SplitConsumer& y) { return x.split.begin() < y.split.begin(); });
    return d;
}

}  // namespace graphmend::rules

// Effect-only fixes that would make a graph of their own: see lone_effects.hpp.
#include "lone_effects.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <utility>

namespace graphmend::fix {

using syntax::Node;

namespace {

using Range = std::pair<std::uint32_t, std::uint32_t>;

// Where a scan along the site's path stopped: at a break that stays (its line), or at the start
// or end of the function (line 0).
struct Stop {
    bool op = false;          // a tensor op was found first
    std::uint32_t line = 0;   // the boundary's line, 0 for the function's own start or end
};

// A value that may be or hold a tensor: a tensor, a container, or a value not known.
bool may_be_tensor(const analysis::Value& v) {
    return v.tensor() || (v.kinds & (analysis::kUnknown | analysis::kSeq)) != 0;
}

// The first block a statement holds (its body, consequence, ...), invalid for a simple one.
Node first_block_of(const Node& stmt) {
    for (const Node& c : stmt.named_children()) {
        if (c.is("block")) return c;
    }
    return Node();
}

class Segments {
public:
    Segments(const rules::Context& ctx, std::vector<Range> kept, std::vector<Range> effects)
        : ctx_(ctx), kept_(std::move(kept)), effects_(std::move(effects)) {}

    // True when running `stmt`, a statement, surely reaches a break that stays: a kept site in
    // the statement itself, outside the blocks it may hold (a simple statement, or the test or
    // header of a compound one: a site whose range starts with the statement's), or a call there
    // of a function of this file whose body surely reaches one at its top level (Dynamo breaks
    // at that call and runs the function as its own frame). A site inside a nested block may
    // lie on a path not taken (T5Stack's pruned-heads branch), so it proves nothing.
    bool breaks(const Node& stmt, int depth = 0) {
        const Node first_block = first_block_of(stmt);
        const std::uint32_t header_end = first_block ? first_block.begin() : stmt.end();
        for (const auto& [b, e] : kept_) {
            if (b == stmt.begin() || (stmt.begin() <= b && e <= header_end)) return true;
        }
        if (depth > 3) return false;
        bool found = false;
        syntax::walk(stmt, [&](const Node& c) {
            if (found || c.begin() >= header_end || c.is("lambda") || c.is("block")) return false;
            if (!c.is("call")) return true;
            const auto callee = ctx_.values.callee(ctx_.file, c);
            if (!callee || callee->file != ctx_.file || !callee->node) return true;
            found = own_frame(callee->node, depth + 1);
            return !found;
        });
        return found;
    }

    // True when the function surely breaks at the top level of its body (breaks).
    bool own_frame(const Node& def, int depth = 0) {
        const auto [it, fresh] = frames_.emplace(def.begin(), false);
        if (fresh) {
            for (const Node& stmt : def.field("body").named_children()) {
                if (!stmt.is("comment") && breaks(stmt, depth)) {
                    it->second = true;
                    break;
                }
            }
        }
        return it->second;
    }

    // True when `n` may compute a tensor: a call of a project function or module, or an
    // expression whose value may be or hold a tensor or is not known (`block(h)` over an
    // nn.ModuleList, an attribute first bound to None). The effect-only sites themselves (other
    // deferred messages) are ops of the same kind, no more.
    bool has_op(const Node& n) const {
        bool found = false;
        syntax::walk(n, [&](const Node& c) {
            if (found || c.is("lambda") || c.is("function_definition") || c.is("class_definition")) return false;
            for (const auto& [b, e] : effects_) {
                if (c.begin() == b && c.end() == e) return false;
            }
            if (c.is("call") && ctx_.values.callee(ctx_.file, c)) {
                found = true;  // a project function or module: its body computes in the same graph
            } else if (c.is("call") || c.is("binary_operator") || c.is("unary_operator") ||
                       c.is("comparison_operator") || c.is("subscript") || c.is("boolean_operator")) {
                found = may_be_tensor(ctx_.values.eval(ctx_.file, c));
            } else if (c.is("augmented_assignment")) {
                found = may_be_tensor(ctx_.values.eval(ctx_.file, c.field("left")));
            }
            return !found;
        });
        return found;
    }

    // A statement as a stop of the scan: a break that stays ends it, a tensor op is found.
    std::optional<Stop> visit(const Node& stmt) {
        if (breaks(stmt)) return Stop{false, stmt.position().line};
        if (has_op(stmt)) return Stop{true, 0};
        return std::nullopt;
    }

    // The test of an `if` or `elif` as a stop: a break at it (a site starting with `clause`, or
    // inside the test), or a tensor op in it.
    std::optional<Stop> visit_test(const Node& clause, const Node& test) {
        for (const auto& [b, e] : kept_) {
            if (b == clause.begin() || (test.begin() <= b && e <= test.end())) return Stop{false, clause.position().line};
        }
        if (has_op(test)) return Stop{true, 0};
        return std::nullopt;
    }

    // Back from `stmt` (exclusive) along its path to a break that stays or the function's start.
    Stop before(Node stmt) {
        for (;;) {
            const Node block = stmt.parent();
            const auto siblings = block.named_children();
            for (auto it = siblings.rbegin(); it != siblings.rend(); ++it) {
                if (it->begin() >= stmt.begin() || it->is("comment")) continue;
                if (auto stop = visit(*it)) return *stop;
            }
            Node owner = block.parent();
            if (!owner || owner.is("function_definition") || owner.is("module")) return {};
            if (owner.is("elif_clause") || owner.is("else_clause")) owner = owner.parent();
            if (owner.is("for_statement") || owner.is("while_statement")) {
                if (has_op(owner)) return {true, 0};  // the body runs again: it is before too
            } else if (owner.is("if_statement")) {
                // The tests up to the site's clause ran before it: ask all of them.
                // The tests up to the site's clause ran before it (the `if` statement's own
                // break, a site starting with it, is its test's).
                if (auto stop = visit_test(owner, owner.field("condition"))) return *stop;
                for (const Node& c : owner.named_children()) {
                    if (c.is("elif_clause") && c.begin() < stmt.begin()) {
                        if (auto stop = visit_test(c, c.field("condition"))) return *stop;
                    }
                }
            }
            stmt = owner;
        }
    }

    // On from `stmt` (exclusive) along its path to a break that stays, a return or raise, or the
    // function's end.
    Stop after(Node stmt) {
        for (;;) {
            const Node block = stmt.parent();
            for (Node s = stmt.next_named_sibling(); s; s = s.next_named_sibling()) {
                if (s.is("comment")) continue;
                if (auto stop = visit(s)) return *stop;
                if (s.is("return_statement") || s.is("raise_statement")) return {};
            }
            Node owner = block.parent();
            if (!owner || owner.is("function_definition") || owner.is("module")) return {};
            if (owner.is("elif_clause") || owner.is("else_clause")) owner = owner.parent();
            if ((owner.is("for_statement") || owner.is("while_statement")) && has_op(owner)) return {true, 0};
            stmt = owner;
        }
    }

private:
    const rules::Context& ctx_;
    std::vector<Range> kept_;
    std::vector<Range> effects_;
    std::map<std::uint32_t, bool> frames_;  // a function of this file (its start) -> own_frame
};

// The statement around `n`: its ancestor that is a child of a block.
Node statement_of(Node n) {
    while (n && !n.parent().is("block") && !n.parent().is("module")) n = n.parent();
    return n;
}

std::string boundary(const Stop& stop, std::string_view edge, const Node& def) {
    if (stop.line != 0) return fmt::format("the break that stays at line {}", stop.line);
    return fmt::format("the {} of `{}`, which runs as a frame of its own", edge, def.field("name").text());
}

}  // namespace

void refuse_lone_effects(const rules::Context& ctx, std::vector<rules::Site>& sites, const std::vector<bool>& stays) {
    std::vector<Range> kept;
    std::vector<Range> effects;
    for (std::size_t i = 0; i < sites.size(); ++i) {
        if (stays[i] && !sites[i].graph_break.empty()) kept.emplace_back(sites[i].begin, sites[i].end);
        if (!stays[i] && sites[i].fix && sites[i].fix->effect_only) effects.emplace_back(sites[i].begin, sites[i].end);
    }
    if (kept.empty()) return;
    Segments segments(ctx, std::move(kept), std::move(effects));
    const Node root = ctx.source().tree.root();
    for (std::size_t i = 0; i < sites.size(); ++i) {
        rules::Site& site = sites[i];
        if (stays[i] || !site.fix || !site.fix->effect_only) continue;
        const Node call = root.descendant(site.begin, site.end, true);
        Node def = analysis::enclosing_function(call);
        while (def && !def.is("function_definition")) def = analysis::enclosing_function(def);
        if (!def || !ctx.project.in_scope(ctx.file, def.begin()) || !segments.own_frame(def)) continue;
        const Node stmt = statement_of(call);
        if (segments.has_op(stmt)) continue;  // its arguments compute tensors: the original had a graph there
        const Stop back = segments.before(stmt);
        if (back.op) continue;
        const Stop on = segments.after(stmt);
        if (on.op) continue;
        site.reason = fmt::format("left as written: no tensor op runs between {} and {}, so the deferred message "
                                  "would be a graph of its own where the original makes none",
                                  boundary(back, "start", def), boundary(on, "end", def));
        site.fix.reset();
    }
}

}  // namespace graphmend::fix

// Building the sites rules report (see rule.hpp): the common fields of a Site, the
// one-line text a report shows for it, and a replacement that keeps a statement's lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <string_view>

#include "graphmend/rule.hpp"

namespace graphmend::rules {

/// A site of the rule `info` covering `node` (its bytes, and its position as `where`),
/// shown as `what`, causing `graph_break`; no fix and no reason yet.
Site new_site(const RuleInfo& info, const syntax::Node& node, std::string what, std::string graph_break);

enum class Blanks {
    Fold,  // a run of blanks becomes one space
    Keep,  // each blank becomes a space
};

/// `text` on one line, as a report shows it: blanks (space, tab, CR, LF) become spaces,
/// and a text longer than `longest` characters is cut to its first 57 and "...".
std::string one_line(std::string_view text, Blanks blanks = Blanks::Fold, std::size_t longest = 60);

/// How a report names the construct `node` is, for people: "an `assert`", "a `continue`",
/// "a `for` loop", "a `:=` expression", "a nested `def`"; for a construct without a name of
/// its own, its first line of text in backquotes.
std::string construct_name(const syntax::Node& node);

/// The argument of `call` at 0-based positional `position` (comments not counted), or the
/// value of its keyword argument `keyword`; an invalid node when it passes neither.
syntax::Node call_argument(const syntax::Node& call, std::size_t position, std::string_view keyword);

/// The indentation of the line `node` starts on, up to the node.
std::string indent_of(const syntax::Node& node);

/// `replacement` for `stmt` keeping its lines: then the statement's comments, each on a
/// line of its own at the statement's indentation, then line breaks (in the file's style)
/// until it has as many as the statement, so that code below keeps its line numbers.
std::string keeping_lines(const syntax::Node& stmt, std::string replacement);

// What a test is while Dynamo traces, and the parts of an `if` it never traces: see values.hpp.
using analysis::untraced_parts;
using analysis::value_when_traced;

/// Calls `visit(node, def)` on every node of the file's in-scope functions, in each
/// function's source order, with `def` the innermost function_definition around the node
/// (lambdas count as part of it); `visit` returns false to skip a node's children. A rule
/// walks this instead of the whole tree: no parent chain is climbed per node, and code
/// outside the compiled scope is never visited, nor code Dynamo never traces (the branch of
/// `if not torch.compiler.is_compiling():`, see untraced_parts; such an `if` itself is not
/// visited, its traced parts are).
template <typename Visit>
void for_each_in_scope(const Context& ctx, Visit&& visit) {
    for (const syntax::Node& def : ctx.project.scope_of(ctx.file)) {
        std::vector<std::pair<std::uint32_t, std::uint32_t>> skipped;  // untraced parts, by range
        syntax::walk(def, [&](const syntax::Node& n) {
            if (n.is("function_definition") && !(n == def)) return false;  // its own entry, if in scope
            for (const auto& [b, e] : skipped) {
                if (n.begin() == b && n.end() == e) return false;
            }
            if (n.is("if_statement")) {
                if (auto parts = untraced_parts(n); !parts.empty()) {
                    for (const auto& p : parts) skipped.emplace_back(p.begin(), p.end());
                    return true;  // not visited itself; its traced parts are
                }
            }
            return visit(n, def);
        });
    }
}

}  // namespace graphmend::rules

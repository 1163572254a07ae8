// Helpers of the strict row layout (row_layout*.cpp): private to those files.
#pragma once

#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rowwise.hpp"

namespace graphmend::rules::layout {

using syntax::Node;
using Rank = RowFlow::Rank;

inline Rank exact(int n) { return {n, true}; }


/// The last component of a dotted name.
inline std::string_view last_part(std::string_view dotted) {
    const auto dot = dotted.rfind('.');
    return dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
}

inline bool starts(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// An integer literal, possibly negated (syntax::int_value), as an int: nullopt past its range.
inline std::optional<int> int_literal(const Node& node) {
    const auto v = syntax::int_value(node);
    if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) return std::nullopt;
    return static_cast<int>(*v);
}

/// Dimension `d` of a tensor of rank `r` as a non-negative index, or nullopt when it cannot be
/// told (a negative index of a rank not known exactly).
inline std::optional<int> resolve_dim(int d, Rank r) {
    if (d >= 0) return d;
    if (r.exact) return d + r.n;
    return std::nullopt;
}

/// The arguments that are not keyword arguments.
inline std::vector<Node> positional(const std::vector<Node>& args) {
    std::vector<Node> out;
    for (const Node& a : args) {
        if (!a.is("keyword_argument")) out.push_back(a);
    }
    return out;
}

/// The value of keyword argument `name`, or invalid.
inline Node keyword(const std::vector<Node>& args, std::string_view name) {
    for (const Node& a : args) {
        if (a.is("keyword_argument") && a.field("name").text() == name) return a.field("value");
    }
    return {};
}

/// The sizes of a view or permute: its arguments, or the elements of its one tuple or list.
inline std::vector<Node> sizes_of(const std::vector<Node>& args) {
    if (args.size() == 1 && (syntax::without_parens(args[0]).is("tuple") || syntax::without_parens(args[0]).is("list"))) {
        return syntax::without_parens(args[0]).named_children();
    }
    return args;
}

/// N of a name ending in "Nd" (Conv2d, conv2d, AvgPool1d), or 0.
inline int spatial_dims(std::string_view leaf) {
    if (leaf.size() < 2 || leaf.back() != 'd') return 0;
    const char c = leaf[leaf.size() - 2];
    return c >= '1' && c <= '3' ? c - '0' : 0;
}

}  // namespace graphmend::rules::layout

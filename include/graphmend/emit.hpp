// Python text for the rewrites (src/emit/): expressions built from their parts, and
// statements laid out one a line in a file's line ending and indentation. Each function
// returns the text as Python spells it, without checking the parts: they are Python text
// already (names, the source of a node, what another builder returned).
//
//     emit::call(runtime::name::span_index, {mask})                   _graphmend_span_index(m)
//     emit::lambda({"row", "col"}, emit::tuple({"x", "y"}))           lambda row, col: (x, y)
//     emit::Lines(emit::Style::at(stmt), indent_of(stmt)).add(a).add(b).text()
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/syntax.hpp"

namespace graphmend::emit {

// --- expressions --------------------------------------------------------------------------

/// `callee(a, b)`.
std::string call(std::string_view callee, std::initializer_list<std::string_view> arguments);

/// `name=value`, a keyword argument.
std::string keyword(std::string_view name, std::string_view value);

/// `lambda: body`.
std::string lambda(std::string_view body);

/// `lambda a, b: body`.
std::string lambda(std::initializer_list<std::string_view> parameters, std::string_view body);

/// `(name := value)`.
std::string walrus(std::string_view name, std::string_view value);

/// `()`, `(a,)`, `(a, b)`; with `trailing_comma`, a comma after every item: `(a, b,)`.
std::string tuple(const std::vector<std::string>& items, bool trailing_comma = false);

/// `"text"`: a string literal in double quotes, `\` and `"` escaped.
std::string string(std::string_view text);

// --- statements ---------------------------------------------------------------------------

/// How a fix lays out lines: its line ending and one level of indentation.
struct Style {
    std::string eol = "\n";
    std::string unit = "    ";

    /// The style of the text that replaces `stmt`: its file's line ending, and a tab for a
    /// level when the statement is indented with tabs, else four spaces.
    static Style at(const syntax::Node& stmt);
};

/// Statements, one a line, from an indentation (`indent`, that of the first line) and
/// deeper. The text begins at the first statement, without its indentation (an edit starts
/// where the statement it replaces began), and ends without a line break.
class Lines {
public:
    Lines(Style style, std::string indent) : style_(std::move(style)), indent_(std::move(indent)) {}

    /// A statement at the current level.
    Lines& add(std::string_view statement);
    /// `header:`; the statements after it are one level deeper, until close().
    Lines& open(std::string_view header);
    /// Back one level.
    Lines& close();

    [[nodiscard]] const std::string& text() const { return text_; }
    [[nodiscard]] bool empty() const { return !started_; }

private:
    Style style_;
    std::string indent_;
    std::size_t depth_ = 0;
    bool started_ = false;
    std::string text_;
};

}  // namespace graphmend::emit

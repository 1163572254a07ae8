// Syntax layer: see include/graphmend/syntax.hpp.
#include "graphmend/syntax.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

extern "C" const TSLanguage* tree_sitter_python();

namespace graphmend::syntax {

SourceText::SourceText(std::string text) : text_(std::move(text)) {
    line_starts_.push_back(0);
    for (std::uint32_t i = 0; i < text_.size(); ++i) {
        if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
    const auto nl = text_.find('\n');
    eol_ = (nl != std::string::npos && nl > 0 && text_[nl - 1] == '\r') ? "\r\n" : "\n";
}

std::string_view SourceText::slice(std::uint32_t begin, std::uint32_t end) const {
    end = std::min<std::uint32_t>(end, static_cast<std::uint32_t>(text_.size()));
    begin = std::min(begin, end);
    return std::string_view(text_).substr(begin, end - begin);
}

LineCol SourceText::position(std::uint32_t offset) const {
    offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text_.size()));
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const auto line = static_cast<std::uint32_t>(it - line_starts_.begin());
    return {line, offset - line_starts_[line - 1] + 1};
}

std::uint32_t SourceText::line_start(std::uint32_t line) const {
    if (line == 0) return 0;
    if (line > line_starts_.size()) return static_cast<std::uint32_t>(text_.size());
    return line_starts_[line - 1];
}

Node Node::field(std::string_view name) const {
    if (!valid()) return {};
    return wrap(ts_node_child_by_field_name(node_, name.data(), static_cast<std::uint32_t>(name.size())));
}

// Children through a tree cursor: ts_node_child(i) starts from the first child each time,
// so a loop over i is quadratic in the number of children (a module's statements).
std::vector<Node> Node::children() const {
    std::vector<Node> out;
    if (!valid()) return out;
    TSTreeCursor cursor = ts_tree_cursor_new(node_);
    if (ts_tree_cursor_goto_first_child(&cursor)) {
        do {
            out.push_back(wrap(ts_tree_cursor_current_node(&cursor)));
        } while (ts_tree_cursor_goto_next_sibling(&cursor));
    }
    ts_tree_cursor_delete(&cursor);
    return out;
}

std::vector<Node> Node::named_children() const {
    std::vector<Node> out;
    if (!valid()) return out;
    TSTreeCursor cursor = ts_tree_cursor_new(node_);
    if (ts_tree_cursor_goto_first_child(&cursor)) {
        do {
            const TSNode n = ts_tree_cursor_current_node(&cursor);
            if (ts_node_is_named(n)) out.push_back(wrap(n));
        } while (ts_tree_cursor_goto_next_sibling(&cursor));
    }
    ts_tree_cursor_delete(&cursor);
    return out;
}

Tree Tree::parse(std::string text) {
    Tree tree;
    tree.source_ = std::make_unique<SourceText>(std::move(text));
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, tree_sitter_python());
    const auto& t = tree.source_->text();
    tree.tree_ = ts_parser_parse_string(parser, nullptr, t.data(), static_cast<std::uint32_t>(t.size()));
    if (ts_node_has_error(ts_tree_root_node(tree.tree_))) {
        Normalized n = normalize_grammar_gaps(t);
        if (!n.starred.empty() || n.joined > 0) {
            TSTree* again =
                ts_parser_parse_string(parser, nullptr, n.text.data(), static_cast<std::uint32_t>(n.text.size()));
            if (ts_node_has_error(ts_tree_root_node(again))) {
                ts_tree_delete(again);
            } else {
                ts_tree_delete(tree.tree_);
                tree.tree_ = again;
                tree.starred_ = std::move(n.starred);
            }
        }
    }
    ts_parser_delete(parser);
    return tree;
}

Tree::Tree(Tree&& other) noexcept
    : source_(std::move(other.source_)),
      tree_(std::exchange(other.tree_, nullptr)),
      starred_(std::move(other.starred_)) {}

Tree& Tree::operator=(Tree&& other) noexcept {
    if (this != &other) {
        if (tree_ != nullptr) ts_tree_delete(tree_);
        source_ = std::move(other.source_);
        tree_ = std::exchange(other.tree_, nullptr);
        starred_ = std::move(other.starred_);
    }
    return *this;
}

Tree::~Tree() {
    if (tree_ != nullptr) ts_tree_delete(tree_);
}

Node Tree::root() const { return {ts_tree_root_node(tree_), source_.get()}; }

std::optional<SyntaxError> Tree::error() const {
    const TSNode root = ts_tree_root_node(tree_);
    if (!ts_node_has_error(root)) return nesting_error();
    // The first ERROR or MISSING node in source order, found with a cursor that enters only
    // subtrees holding an error: no recursion, so any nesting depth is safe.
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    std::optional<SyntaxError> found;
    for (;;) {
        const TSNode n = ts_tree_cursor_current_node(&cursor);
        if (ts_node_is_missing(n)) {
            found = SyntaxError{source_->position(ts_node_start_byte(n)),
                                fmt::format("syntax error: missing '{}'", ts_node_type(n))};
            break;
        }
        if (std::string_view(ts_node_type(n)) == "ERROR") {
            found = SyntaxError{source_->position(ts_node_start_byte(n)), "syntax error: unexpected input"};
            break;
        }
        // Into the first child holding an error; else on to the next sibling that does.
        bool moved = false;
        if (ts_tree_cursor_goto_first_child(&cursor)) {
            do {
                if (ts_node_has_error(ts_tree_cursor_current_node(&cursor))) {
                    moved = true;
                    break;
                }
            } while (ts_tree_cursor_goto_next_sibling(&cursor));
        }
        if (!moved) break;
    }
    ts_tree_cursor_delete(&cursor);
    if (!found) found = SyntaxError{{1, 1}, "syntax error"};
    return found;
}

// CPython's tokenizer refuses brackets nested deeper than 200 levels ("too many nested
// parentheses", MAXLEVEL in Parser/tokenizer.h, 3.8-3.13): so does graphmend, at the first
// bracket past that depth, counted over the tree's bracket tokens with a cursor.
std::optional<SyntaxError> Tree::nesting_error() const {
    constexpr int kMaxLevel = 200;
    int depth = 0;
    std::optional<SyntaxError> found;
    walk(root(), [&](const Node& n) {
        if (found) return false;
        if (n.named()) return true;
        const std::string_view t = n.type();
        if (t == "(" || t == "[" || t == "{") {
            if (++depth > kMaxLevel) {
                found = SyntaxError{n.position(), "syntax error: too many nested parentheses (CPython reads at most "
                                                  "200 levels)"};
            }
        } else if ((t == ")" || t == "]" || t == "}") && depth > 0) {
            --depth;
        }
        return true;
    });
    return found;
}
Node without_parens(Node node) {
    while (node.is("parenthesized_expression") && !node.named_children().empty()) node = node.named_children()[0];
    return node;
}

std::size_t count_newlines(std::string_view text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace graphmend::syntax

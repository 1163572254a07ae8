// Syntax layer: see include/graphmend/syntax.hpp.
#include "graphmend/syntax.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <array>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <tree_sitter/api.h>

extern "C" const TSLanguage* tree_sitter_python();

namespace graphmend::syntax {

SourceText::SourceText(std::string text) : text_(std::move(text)) {
    static std::atomic<std::uint64_t> next{1};
    serial_ = next.fetch_add(1, std::memory_order_relaxed);
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

namespace {

const TSLanguage* python() {
    static const TSLanguage* language = tree_sitter_python();
    return language;
}

// The first ERROR or MISSING node in source order, found with a cursor that enters only
// subtrees holding an error: no recursion, so any nesting depth is safe.
std::optional<SyntaxError> first_error(const TSNode root, const SourceText& source) {
    if (!ts_node_has_error(root)) return std::nullopt;
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    std::optional<SyntaxError> found;
    for (;;) {
        const TSNode n = ts_tree_cursor_current_node(&cursor);
        if (ts_node_is_missing(n)) {
            found = SyntaxError{source.position(ts_node_start_byte(n)),
                                fmt::format("syntax error: missing '{}'", ts_node_type(n))};
            break;
        }
        if (std::string_view(ts_node_type(n)) == "ERROR") {
            found = SyntaxError{source.position(ts_node_start_byte(n)), "syntax error: unexpected input"};
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

// A symbol's type: its name's index in grammar::kTypeNames.
std::uint16_t type_of(TSSymbol symbol) {
    if (symbol < grammar::kSymbolCount) return grammar::kTypeOfSymbol[symbol];
    return symbol == static_cast<TSSymbol>(-1) ? grammar::kErrorType : grammar::kErrorRepeatType;
}

// The visible nodes of tree-sitter's tree, in preorder, as a tree cursor walks them (a cursor
// step is O(1); the field is the cursor's, which follows fields through hidden nodes as
// ts_node_child_by_field_id does).
std::unique_ptr<NodeTable> node_table(const TSNode root, const SourceText& source) {
    auto table = std::make_unique<NodeTable>();
    table->source = &source;
    auto& nodes = table->nodes;
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    // Counted first, so the table is allocated once: grown by doubling, it would hold up to
    // three times its size at once, beside the tree it copies (the largest file's peak).
    std::size_t count = 1;
    for (bool down = true;;) {
        if (down && ts_tree_cursor_goto_first_child(&cursor)) {
            ++count;
            continue;
        }
        if (ts_tree_cursor_goto_next_sibling(&cursor)) {
            ++count;
            down = true;
            continue;
        }
        if (!ts_tree_cursor_goto_parent(&cursor)) break;
        down = false;
    }
    ts_tree_cursor_reset(&cursor, root);
    nodes.reserve(count);
    std::vector<std::uint32_t> open;  // the nodes whose subtree is being read, root first
    const auto add = [&](std::uint32_t parent) {
        const TSNode n = ts_tree_cursor_current_node(&cursor);
        NodeTable::Entry e;
        e.begin = ts_node_start_byte(n);
        e.end = ts_node_end_byte(n);
        e.parent = parent;
        e.type = type_of(ts_node_symbol(n));
        // The grammar's field ids fit in 15 bits (it has about 30; the NodeTable test reads them all).
        const TSFieldId field = ts_tree_cursor_current_field_id(&cursor);
        e.field_named = static_cast<std::uint16_t>((field & 0x7fff) | (ts_node_is_named(n) ? 0x8000 : 0));
        open.push_back(static_cast<std::uint32_t>(nodes.size()));
        nodes.push_back(e);
    };
    add(NodeTable::kNone);
    for (;;) {
        if (ts_tree_cursor_goto_first_child(&cursor)) {
            add(open.back());
            continue;
        }
        // Close nodes until one has a next sibling.
        for (;;) {
            nodes[open.back()].subtree_end = static_cast<std::uint32_t>(nodes.size());
            open.pop_back();
            if (open.empty()) {
                ts_tree_cursor_delete(&cursor);
                return table;
            }
            if (ts_tree_cursor_goto_next_sibling(&cursor)) {
                add(open.back());
                break;
            }
            ts_tree_cursor_goto_parent(&cursor);
        }
    }
}

}  // namespace

Node Node::first_child() const {
    if (!valid()) return absent();
    const std::uint32_t next = index_ + 1;
    return next < entry().subtree_end ? Node(table_, next) : absent();
}

Node Node::next_sibling() const {
    if (!valid() || entry().parent == NodeTable::kNone) return absent();
    const std::uint32_t next = entry().subtree_end;
    return next < table_->nodes[entry().parent].subtree_end ? Node(table_, next) : absent();
}

Node Node::next_named_sibling() const {
    Node n = next_sibling();
    while (n && !n.named()) n = n.next_sibling();
    return n;
}

Node Node::descendant(std::uint32_t begin, std::uint32_t end, bool named) const {
    // ts_node__descendant_for_byte_range (tree-sitter 0.24, lib/src/node.c) over the visible
    // children: a hidden node's children are its visible parent's here, in the same order.
    if (!valid() || begin > end) return absent();
    Node at = *this;
    Node last = *this;
    for (bool descended = true; descended;) {
        descended = false;
        for (Node c = at.first_child(); c; c = c.next_sibling()) {
            const std::uint32_t c_end = c.end();
            if (c_end < end) continue;  // it must reach the end of the range
            // ... and pass its start, or, when empty, at least touch it
            if (c.begin() == c_end ? c_end < begin : c_end <= begin) continue;
            if (begin < c.begin()) break;  // it must start at or before the range
            at = c;
            if (!named || c.named()) last = c;
            descended = true;
            break;
        }
    }
    return last;
}

Node Node::field(FieldName name) const {
    for (Node c = first_child(); c; c = c.next_sibling()) {
        if (c.entry().field() == name.id()) return c;
    }
    return absent();
}

std::string_view Node::field_name() const {
    if (!valid() || entry().field() >= std::size(grammar::kFieldNames)) return {};
    return grammar::kFieldNames[entry().field()];
}

std::uint32_t Node::child_count() const {
    std::uint32_t count = 0;
    for (Node c = first_child(); c; c = c.next_sibling()) ++count;
    return count;
}

Node Node::child(std::uint32_t i) const {
    Node c = first_child();
    for (; c && i > 0; --i) c = c.next_sibling();
    return c;
}

std::vector<Node> Node::children() const {
    std::vector<Node> out;
    for (Node c = first_child(); c; c = c.next_sibling()) out.push_back(c);
    return out;
}

std::vector<Node> Node::named_children() const {
    std::vector<Node> out;
    for (Node c = first_child(); c; c = c.next_sibling()) {
        if (c.named()) out.push_back(c);
    }
    return out;
}

Tree Tree::parse(std::string text) {
    Tree tree;
    tree.source_ = std::make_unique<SourceText>(std::move(text));
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, python());
    const auto& t = tree.source_->text();
    TSTree* parsed = ts_parser_parse_string(parser, nullptr, t.data(), static_cast<std::uint32_t>(t.size()));
    if (ts_node_has_error(ts_tree_root_node(parsed))) {
        Normalized n = normalize_grammar_gaps(t);
        if (!n.starred.empty() || n.joined > 0) {
            TSTree* again =
                ts_parser_parse_string(parser, nullptr, n.text.data(), static_cast<std::uint32_t>(n.text.size()));
            if (ts_node_has_error(ts_tree_root_node(again))) {
                ts_tree_delete(again);
            } else {
                ts_tree_delete(parsed);
                parsed = again;
                tree.starred_ = std::move(n.starred);
            }
        }
    }
    ts_parser_delete(parser);
    const TSNode root = ts_tree_root_node(parsed);
    tree.parse_error_ = first_error(root, *tree.source_);
    tree.nodes_ = node_table(root, *tree.source_);
    ts_tree_delete(parsed);  // the table holds what is read of it
    return tree;
}

Tree::Tree(Tree&& other) noexcept = default;
Tree& Tree::operator=(Tree&& other) noexcept = default;
Tree::~Tree() = default;

Node Tree::root() const { return {nodes_.get(), 0}; }

std::optional<SyntaxError> Tree::error() const {
    if (parse_error_) return parse_error_;
    if (auto nesting = nesting_error()) return nesting;
    return indentation_error();
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
        if (n.is("(") || n.is("[") || n.is("{")) {
            if (++depth > kMaxLevel) {
                found = SyntaxError{n.position(), "syntax error: too many nested parentheses (CPython reads at most "
                                                  "200 levels)"};
            }
        } else if ((n.is(")") || n.is("]") || n.is("}")) && depth > 0) {
            --depth;
        }
        return true;
    });
    return found;
}
namespace {

// A line's indentation as CPython's tokenizer measures it: columns with tabs to the next
// multiple of 8 (col) and with tabs as 1 column (altcol, for TabError).
struct Indent {
    std::uint32_t col = 0;
    std::uint32_t altcol = 0;
    [[nodiscard]] bool same(const Indent& o) const { return col == o.col && altcol == o.altcol; }
    [[nodiscard]] bool deeper(const Indent& o) const { return col > o.col && altcol > o.altcol; }
};

// The indentation of the line holding `offset`, when the code there is the line's first token
// (else nullopt: after `;` or `:` on the same line, a line continued by a backslash, or a
// form feed in the indentation, which CPython resets columns on).
std::optional<Indent> indent_before(const SourceText& source, std::uint32_t offset, bool must_begin_line) {
    const std::string& text = source.text();
    const std::uint32_t start = source.line_start(source.position(offset).line);
    Indent in;
    std::uint32_t i = start;
    for (; i < offset && i < text.size(); ++i) {
        const char c = text[i];
        if (c == ' ') {
            ++in.col;
            ++in.altcol;
        } else if (c == '\t') {
            in.col = (in.col / 8 + 1) * 8;
            ++in.altcol;
        } else if (c == '\f') {
            return std::nullopt;
        } else {
            if (must_begin_line) return std::nullopt;
            break;
        }
    }
    // A backslash ending the line before joins this line to it: no indentation of its own.
    std::uint32_t j = start;
    if (j > 0 && text[j - 1] == '\n') --j;
    if (j > 0 && text[j - 1] == '\r') --j;
    if (j > 0 && j < start && text[j - 1] == '\\') return std::nullopt;
    return in;
}

bool is_clause(const Node& n) {
    return n.is("else_clause") || n.is("elif_clause") || n.is("except_clause") || n.is("except_group_clause") ||
           n.is("finally_clause");
}

// A simple statement: it holds no block and no clause, so the indentation check does not
// enter it (most of a tree's nodes are inside these).
bool is_simple_statement(const Node& n) {
    return n.is("expression_statement") || n.is("return_statement") || n.is("import_statement") ||
           n.is("import_from_statement") || n.is("future_import_statement") || n.is("raise_statement") ||
           n.is("assert_statement") || n.is("delete_statement") || n.is("pass_statement") ||
           n.is("break_statement") || n.is("continue_statement") || n.is("global_statement") ||
           n.is("nonlocal_statement") || n.is("print_statement") || n.is("exec_statement") ||
           n.is("type_alias_statement");
}

}  // namespace

std::optional<SyntaxError> Tree::indentation_error() const {
    constexpr const char* kTabs = "inconsistent use of tabs and spaces in indentation";
    constexpr const char* kNoMatch = "indentation matches no enclosing block";
    const SourceText& source = *source_;
    std::optional<SyntaxError> found;
    const auto fail = [&](const Node& at, const char* what) {
        found = SyntaxError{at.position(), fmt::format("syntax error: {}", what)};
    };
    walk(root(), [&](const Node& n) {
        if (found) return false;
        const bool module = n.is("module");
        if (module || n.is("block")) {
            std::optional<Indent> header;
            if (!module) header = indent_before(source, n.parent().begin(), false);
            std::optional<Indent> first;
            for (const Node& s : n.named_children()) {
                if (s.is("comment")) continue;
                const auto in = indent_before(source, s.begin(), true);
                if (!in) continue;
                if (module) {
                    if (in->col != 0 || in->altcol != 0) fail(s, first ? kNoMatch : "unexpected indent");
                    first = in;
                } else if (!first) {
                    first = in;
                    if (header && !in->deeper(*header)) fail(s, in->col > header->col ? kTabs : "expected an indented block");
                } else if (!in->same(*first)) {
                    fail(s, in->col == first->col ? kTabs : kNoMatch);
                }
                if (found) return false;
            }
        } else if (is_clause(n)) {
            const auto in = indent_before(source, n.begin(), true);
            const auto of = indent_before(source, n.parent().begin(), false);
            if (in && of && !in->same(*of)) {
                fail(n, in->col == of->col ? kTabs : kNoMatch);
                return false;
            }
        } else if (is_simple_statement(n)) {
            return false;
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

std::size_t lf_for_lone_crs(std::string& text) {
    std::size_t count = 0;
    for (std::size_t i = text.find('\r'); i != std::string::npos; i = text.find('\r', i + 1)) {
        if (i + 1 < text.size() && text[i + 1] == '\n') continue;
        text[i] = '\n';
        ++count;
    }
    return count;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    // generic_category().message is strerror's text, but thread-safe (files are read in parallel).
    if (!in) throw std::runtime_error(fmt::format("{}: cannot read: {}", path, std::generic_category().message(errno)));
    std::string text;
    std::error_code ec;
    if (const auto size = std::filesystem::file_size(path, ec); !ec) text.reserve(size);
    std::array<char, 1 << 16> chunk{};
    while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) text.append(chunk.data(), in.gcount());
    return text;
}

}  // namespace graphmend::syntax

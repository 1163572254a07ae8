// graphmend syntax layer: Python source text, positions, the tree-sitter parse tree, the
// grammar's node type and field names (checked when a call site compiles), and literals.
//
// Inputs are byte strings, meant to be UTF-8 (not checked: tree-sitter reads other bytes,
// usually as a syntax error). Every position is a byte offset into the original text (0-based,
// 32-bit: a text is under 4 GiB) or a line/column pair (1-based line, 1-based column counted in
// bytes, so a character of several UTF-8 bytes takes several columns), the convention of
// compilers' `path:line:col:` messages. Lines end at '\n' (a CRLF line's '\r' is its last
// column). Nothing here changes source text but lf_for_lone_crs, in the string it is given.
// Bad input is never an exception: a syntax error is Tree::error(), an absent node an invalid
// Node, text that is no integer literal nullopt; only read_file throws (and allocation).
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/grammar_names.hpp"

namespace graphmend::syntax {

/// A position as `line:col`, both 1-based; col counts bytes.
struct LineCol {
    std::uint32_t line = 1;
    std::uint32_t col = 1;
};

/// The text of one source file, with the line table used to turn byte offsets into
/// line/column positions and the line ending and indentation conventions it uses.
class SourceText {
public:
    /// Takes the file's bytes as they are (no decoding, no newline conversion).
    explicit SourceText(std::string text);

    [[nodiscard]] const std::string& text() const { return text_; }
    /// The bytes [begin, end), a view into text(): `end` clamps to the text's size and `begin`
    /// to `end`, so any pair of offsets gives a (possibly empty) slice.
    [[nodiscard]] std::string_view slice(std::uint32_t begin, std::uint32_t end) const;
    /// 1-based line/col of a byte offset (offsets past the end clamp to the end).
    [[nodiscard]] LineCol position(std::uint32_t offset) const;
    /// Byte offset of the start of a 1-based line: 0 for line 0, the text's size past the last.
    [[nodiscard]] std::uint32_t line_start(std::uint32_t line) const;
    /// "\r\n" when the file's first line ending is CRLF, "\n" otherwise.
    [[nodiscard]] std::string_view eol() const { return eol_; }
    /// A number no other SourceText of this process has (a copy keeps it, with the same
    /// text): with a node's offsets it names that node across the run, where the address of a
    /// freed text could be reused (analysis::FunctionMemo).
    [[nodiscard]] std::uint64_t serial() const { return serial_; }

private:
    std::string text_;
    std::vector<std::uint32_t> line_starts_;
    std::string eol_;
    std::uint64_t serial_ = 0;
};

// Called only where a name is not the grammar's: not constexpr, so the name's TypeName or
// FieldName fails to compile, with this function's name in the error.
void not_a_node_type_of_tree_sitter_python(std::string_view name);
void not_a_field_of_tree_sitter_python(std::string_view name);

/// A node type of the tree-sitter-python grammar, by name: a string literal checked when the
/// program compiles (a name no node can have, such as a misspelling, a hidden rule or a
/// supertype like "expression", is a compile error). Both a named node's type ("identifier") and
/// an anonymous token's ("==", "is not") are names; so is "ERROR".
class TypeName {
public:
    consteval TypeName(const char* name) : index_(find(name)) {}  // implicit: `n.is("call")`
    [[nodiscard]] constexpr std::string_view name() const { return grammar::kTypeNames[index_]; }
    /// Its index in grammar::kTypeNames: the type a NodeTable entry holds.
    [[nodiscard]] constexpr std::uint16_t index() const { return index_; }

private:
    static consteval std::uint16_t find(std::string_view name) {
        for (std::size_t i = 0; i < std::size(grammar::kTypeNames); ++i) {
            if (grammar::kTypeNames[i] == name && grammar::kTypeVisible[i]) return static_cast<std::uint16_t>(i);
        }
        not_a_node_type_of_tree_sitter_python(name);
        return 0;
    }
    std::uint16_t index_;
};

/// A field of the tree-sitter-python grammar ("function", "arguments"), by name: a string literal
/// checked when the program compiles, as TypeName's.
class FieldName {
public:
    consteval FieldName(const char* name) : id_(find(name)) {}  // implicit: `n.field("body")`
    /// The field of the grammar's field id `id` (1 up to the grammar's field count, as
    /// ts_language_field_count tells), unchecked: for a walk over every field.
    static constexpr FieldName of_id(std::uint16_t id) { return FieldName(id, 0); }
    [[nodiscard]] constexpr std::string_view name() const { return grammar::kFieldNames[id_]; }
    /// tree-sitter's field id (TSFieldId): 1 and up.
    [[nodiscard]] constexpr std::uint16_t id() const { return id_; }

private:
    constexpr FieldName(std::uint16_t id, int /*unchecked*/) : id_(id) {}
    static consteval std::uint16_t find(std::string_view name) {
        for (std::size_t i = 1; i < std::size(grammar::kFieldNames); ++i) {
            if (grammar::kFieldNames[i] == name) return static_cast<std::uint16_t>(i);
        }
        not_a_field_of_tree_sitter_python(name);
        return 0;
    }
    std::uint16_t id_;
};

/// The nodes of one parse, held compactly (20 bytes a node, against about 110 in
/// tree-sitter's own tree, whose parse is dropped once copied): tree-sitter's visible nodes, in
/// source order (preorder), each with its parent and the end of its subtree, so a parent, a
/// next sibling and a walk are O(1) a step. Built by Tree::parse; read through Node.
struct NodeTable {
    struct Entry {
        std::uint32_t begin = 0;        // byte offsets into the source
        std::uint32_t end = 0;
        std::uint32_t parent = 0;       // kNone for the root
        std::uint32_t subtree_end = 0;  // one past the last node of this node's subtree
        /// The node's type (ts_node_symbol, aliases applied), as its name's index in
        /// grammar::kTypeNames: nodes of one name have one type, as their names compare.
        std::uint16_t type = 0;
        /// The field it is in its parent (0: none), as a tree cursor reads it, in the low 15
        /// bits (the grammar has about 30 fields); the top bit: the node is named.
        std::uint16_t field_named = 0;
        [[nodiscard]] std::uint16_t field() const { return field_named & 0x7fff; }
        [[nodiscard]] bool named() const { return (field_named & 0x8000) != 0; }
    };
    static_assert(sizeof(Entry) == 20);
    static constexpr std::uint32_t kNone = UINT32_MAX;
    std::vector<Entry> nodes;
    const SourceText* source = nullptr;
};

/// A read-only view of one parse-tree node, valid while its Tree lives. An invalid node (an
/// absent field or parent) answers every query as an empty node does: no type, no children.
/// Types, fields and the node chosen for a byte range are tree-sitter's (0.24), which the
/// table copies (`SyntaxLimits.NodeTableAgreesWithTreeSitter` compares them).
class Node {
public:
    Node() = default;
    Node(const NodeTable* table, std::uint32_t index) : table_(table), index_(index) {}

    [[nodiscard]] bool valid() const { return table_ != nullptr && index_ != NodeTable::kNone; }
    explicit operator bool() const { return valid(); }
    /// The grammar's name of the node's type ("call", "==", "ERROR"; "" when absent), a view of a
    /// static table. Prefer is() to comparing it: is() checks the name when it compiles.
    [[nodiscard]] std::string_view type() const {
        return valid() ? grammar::kTypeNames[entry().type] : std::string_view();
    }
    /// True when the node has this type (`n.is("call")`): type() == type.name(), one compare.
    [[nodiscard]] bool is(TypeName type) const { return valid() && entry().type == type.index(); }
    /// A named node is a grammar rule's ("identifier", "call"); an anonymous one a literal token
    /// of the grammar ("(", "==", "if"). False when absent.
    [[nodiscard]] bool named() const { return valid() && entry().named(); }
    /// The node's bytes are [begin, end) of its tree's source text; both 0 when absent.
    [[nodiscard]] std::uint32_t begin() const { return valid() ? entry().begin : 0; }
    [[nodiscard]] std::uint32_t end() const { return valid() ? entry().end : 0; }
    /// The node's source bytes, a view into its tree's text (valid while the Tree lives).
    /// An absent node found from a node of a tree (a field, a parent, a child) keeps its tree:
    /// its text is "" and its position 1:1, as tree-sitter's null node read through the text.
    [[nodiscard]] std::string_view text() const { return valid() ? source().slice(begin(), end()) : std::string_view(); }
    /// The line and column of begin().
    [[nodiscard]] LineCol position() const { return table_ != nullptr ? source().position(begin()) : LineCol{}; }
    /// The enclosing node; absent for the root.
    [[nodiscard]] Node parent() const { return valid() ? Node(table_, entry().parent) : absent(); }
    /// The first child, the next and the next named sibling (invalid when there is none).
    [[nodiscard]] Node first_child() const;
    [[nodiscard]] Node next_sibling() const;
    [[nodiscard]] Node next_named_sibling() const;
    /// The smallest node under this one (a named one when `named`) spanning the bytes
    /// [begin, end): how a node is found again from offsets a per-function index kept
    /// (tree-sitter's ts_node_descendant_for_byte_range).
    [[nodiscard]] Node descendant(std::uint32_t begin, std::uint32_t end, bool named = false) const;
    /// The first child in the field `name` (ts_node_child_by_field_name), with one difference:
    /// a field that tree-sitter also finds on a grandchild, through an alias that makes a hidden
    /// rule visible, is only the child's (a match_statement's `alternative`s are its block's).
    [[nodiscard]] Node field(FieldName name) const;
    /// The name of the field this node is in its parent, or "" (ts_node_field_name_for_child).
    [[nodiscard]] std::string_view field_name() const;
    /// True when this node is in the field `name` of its parent (field_name() == name.name()).
    [[nodiscard]] bool in_field(FieldName name) const { return valid() && entry().field() == name.id(); }
    /// The children, named and anonymous, in source order: their count, the i-th (0-based;
    /// absent past the last; O(i)), all of them, and the named ones only (comments included).
    [[nodiscard]] std::uint32_t child_count() const;
    [[nodiscard]] Node child(std::uint32_t i) const;
    [[nodiscard]] std::vector<Node> children() const;
    [[nodiscard]] std::vector<Node> named_children() const;
    /// The text of the node's tree. Not for a default-constructed Node, which has no tree.
    [[nodiscard]] const SourceText& source() const { return *table_->source; }
    /// The same node of the same tree (the absent nodes of one tree are all equal).
    [[nodiscard]] bool operator==(const Node& other) const {
        return table_ == other.table_ && index_ == other.index_;
    }

private:
    [[nodiscard]] const NodeTable::Entry& entry() const { return table_->nodes[index_]; }
    [[nodiscard]] Node absent() const { return {table_, NodeTable::kNone}; }
    const NodeTable* table_ = nullptr;
    std::uint32_t index_ = NodeTable::kNone;
};

/// The node's source text as a string of its own (a copy of node.text(): UTF-8 bytes as in the
/// file; "" for an absent node). Called unqualified, `text(node)`, it is found by the argument.
inline std::string text(const Node& node) { return std::string(node.text()); }

/// The value of a Python integer literal, from its text (an `integer` node's): decimal ("10",
/// "1_000", "00"), hexadecimal ("0x10"), octal ("0o17") or binary ("0b101"), with a prefix and
/// hex digits in either case and a `_` between digits or right after the prefix, as Python 3
/// reads them. nullopt, never an exception, for any other text: a sign or blanks, a float, the
/// grammar's imaginary `10j` and Python 2 `10L` (it reads both as `integer`), a decimal with a
/// leading zero ("010", which Python 3 refuses), a misplaced `_`, or a value past INT64_MAX.
std::optional<std::int64_t> parse_int(std::string_view literal);

/// The value of `node` when it is an integer literal (parse_int), in parentheses or not, negated
/// by unary `-` any number of times (`-1`, `(-0x10)`, `-(2)`): down to INT64_MIN. nullopt for
/// any other node (`+1`, `~1`, `1 + 1`, a name, an absent node) and where parse_int gives none.
std::optional<std::int64_t> int_value(const Node& node);

/// The first syntax error of a tree: where, and what was found there (one line that begins
/// "syntax error: ", as a report shows it after `path:line:col: `).
struct SyntaxError {
    LineCol where;
    std::string message;
};

/// A copy of a source text, of the same length byte for byte, that the grammar
/// (tree-sitter-python 0.23.6) reads the way CPython reads the original. Two gaps of the
/// grammar are normalised:
/// - a starred bracketed operand in an unparenthesised expression list (`x = a, *[1]`,
///   `return *[None] * 3, *g`, `for q in a, *(b,):`) is a syntax error for the grammar: the
///   `*` becomes a space, so the operand reads as a plain element (`starred` holds the `*`s'
///   byte offsets: the tree there lacks the list_splat node);
/// - a line inside brackets that ends in `.` or an operator, followed by a line indented below
///   the enclosing block (`(bar.\nbaz)`), is read as a dedent: that line's newline (and a CR
///   before it) becomes a space, which inside brackets changes nothing (`joined` counts them).
///   A line holding `#` is left alone, so a join never hides code in a comment.
/// Strings and comments are skipped by a light tokenizer. Used only after a parse failed, and
/// kept only when its parse is clean; positions stay those of the original text.
struct Normalized {
    std::string text;
    std::vector<std::uint32_t> starred;
    std::size_t joined = 0;
};
Normalized normalize_grammar_gaps(std::string_view text);

/// A parsed file: owns the text and its nodes (tree-sitter's own tree is dropped once read).
class Tree {
public:
    /// Parses `text` (a whole file's bytes, under 4 GiB) with the tree-sitter Python grammar.
    /// Never throws on bad input: a tree is always made, with ERROR or MISSING nodes where the
    /// text does not parse; check error() before using the tree for rewriting. When the text
    /// does not parse but its normalize_grammar_gaps copy does, the tree is that copy's, over the
    /// original text.
    static Tree parse(std::string text);

    Tree(Tree&& other) noexcept;
    Tree& operator=(Tree&& other) noexcept;
    Tree(const Tree&) = delete;
    Tree& operator=(const Tree&) = delete;
    ~Tree();

    /// The root, a `module` node: it begins at the first token or comment, after any blank lines,
    /// and ends after the last. Nodes are valid while the Tree lives (a move keeps them valid: the
    /// nodes and the text are held by pointer).
    [[nodiscard]] Node root() const;
    [[nodiscard]] const SourceText& source() const { return *source_; }
    /// The first ERROR or MISSING node, if the tree holds any; else brackets nested deeper than
    /// CPython's tokenizer reads (200 levels: "too many nested parentheses"); else indentation
    /// CPython refuses but the grammar's scanner accepts (see indentation_error). Iterative:
    /// any nesting depth is safe.
    [[nodiscard]] std::optional<SyntaxError> error() const;
    /// Byte offsets of the `*`s the parse read as spaces (see Normalized::starred): an edit
    /// over one would be built from a tree without its list_splat.
    [[nodiscard]] const std::vector<std::uint32_t>& starred_gaps() const { return starred_; }

private:
    Tree() = default;
    [[nodiscard]] std::optional<SyntaxError> nesting_error() const;
    /// CPython's tokenizer rules for indentation (Parser/tokenizer.c, 3.8-3.13), which the
    /// grammar's scanner does not keep: a dedent to a column no enclosing block has
    /// ("unindent does not match any outer indentation level"), `else:`/`except`/... at another
    /// column than its statement, a module-level statement indented ("unexpected indent"), a
    /// block not indented past its header, and indentation that compares differently with tabs
    /// of 8 and of 1 column (TabError). Only statements that begin their line are checked (not
    /// after `;`, a header's `:` or a backslash continuation); a line holding a form feed is
    /// not checked.
    [[nodiscard]] std::optional<SyntaxError> indentation_error() const;
    std::unique_ptr<SourceText> source_;
    std::unique_ptr<NodeTable> nodes_;
    /// The first ERROR or MISSING node's error, found while tree-sitter's tree was held.
    std::optional<SyntaxError> parse_error_;
    std::vector<std::uint32_t> starred_;
};

/// Calls `visit` on `node` and every descendant in source order; `visit` returns false
/// to skip a node's children. An invalid node (an absent field, such as the value of a bare
/// annotation `y: T`) has nothing to visit.
template <typename Visit>
void walk(const Node& node, Visit&& visit) {
    // Each step is O(1) (NodeTable links parents and siblings): no recursion, so any depth is
    // safe, and no indexing of children, which would be quadratic in the number of siblings.
    if (!node.valid() || !visit(node)) return;
    Node at = node;
    bool descend = true;
    for (;;) {
        if (descend) {
            if (const Node child = at.first_child()) {
                at = child;
                descend = visit(at);
                continue;
            }
        }
        for (;;) {
            if (at == node) return;
            if (const Node next = at.next_sibling()) {
                at = next;
                break;
            }
            at = at.parent();
        }
        descend = visit(at);
    }
}

/// The expression inside the parentheses around `node` (`((x))` -> `x`); `node` itself when it
/// is not parenthesized. An empty `()` is a tuple, not parentheses, and stays.
Node without_parens(Node node);

/// A row of a table keyed by node type (`{"call", "a call"}`): its type is checked as is()'s.
template <typename T>
struct TypeRow {
    TypeName type;
    T value;
};

/// The value of the row of `rows` for `node`'s type, or nullptr when none is.
template <typename T, std::size_t N>
const T* row_for(const TypeRow<T> (&rows)[N], const Node& node) {
    for (const TypeRow<T>& row : rows) {
        if (node.is(row.type)) return &row.value;
    }
    return nullptr;
}

/// The number of '\n' bytes in `text`.
std::size_t count_newlines(std::string_view text);

/// Turns every lone CR of `text` (a '\r' not followed by '\n') into '\n', in place, and
/// returns how many there were. CPython ends a line at a lone CR, as at LF and CRLF (universal
/// newlines); tree-sitter's grammar does not (a `#` comment runs on to the next LF). Offsets
/// stay: both are one byte.
std::size_t lf_for_lone_crs(std::string& text);

/// Reads a whole file, as bytes. Throws std::runtime_error "PATH: cannot read: REASON" when it
/// cannot be read. Safe to call from several threads.
std::string read_file(const std::string& path);

}  // namespace graphmend::syntax

// Pre-parse normalisation for the grammar's gaps: see normalize_grammar_gaps in
// include/graphmend/syntax.hpp.
#include <cstring>
#include <string_view>

#include "graphmend/syntax.hpp"

namespace graphmend::syntax {
namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\f'; }
bool ident(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
}

// The word that ends at `end` (exclusive), or "" when the byte before it is not a name's.
std::string_view word_before(std::string_view text, std::size_t end) {
    std::size_t begin = end;
    while (begin > 0 && ident(text[begin - 1])) --begin;
    return text.substr(begin, end - begin);
}

// The last byte of `text` before `at` that is not white space (newlines included), or '\0'.
std::size_t previous_significant(std::string_view text, std::size_t at) {
    while (at > 0 && (space(text[at - 1]) || text[at - 1] == '\n' || text[at - 1] == '\r' || text[at - 1] == '\\')) {
        --at;
    }
    return at;  // one past the byte, 0 when there is none
}

// A `*` that starts a starred operand in an expression list: after `,` or a lone `=`, or the
// keywords that take one (`return`, `yield`, `in` of a for), and followed by a bracket.
bool starred_bracket(std::string_view text, std::size_t at) {
    if (at + 1 < text.size() && text[at + 1] == '*') return false;
    if (at > 0 && text[at - 1] == '*') return false;
    std::size_t next = at + 1;
    while (next < text.size() && space(text[next])) ++next;
    if (next >= text.size() || std::strchr("([{", text[next]) == nullptr) return false;
    const std::size_t prev = previous_significant(text, at);
    if (prev == 0) return false;
    const char p = text[prev - 1];
    if (p == ',') return true;
    if (p == '=') return prev < 2 || std::strchr("=!<>:+-*/%&|^@", text[prev - 2]) == nullptr;
    const std::string_view w = word_before(text, prev);
    const bool word_alone = prev == w.size() || !ident(text[prev - w.size() - 1]);
    return word_alone && (w == "return" || w == "yield" || w == "in");
}

// A line inside brackets that ends in `.` or an operator (and holds no comment): the
// grammar's scanner then reads a following line indented below the block as a dedent.
bool ends_in_operator(std::string_view text, std::size_t line_begin, std::size_t newline) {
    std::size_t end = newline;
    if (end > line_begin && text[end - 1] == '\r') --end;
    if (text.substr(line_begin, end - line_begin).find('#') != std::string_view::npos) return false;
    while (end > line_begin && space(text[end - 1])) --end;
    if (end == line_begin) return false;
    return std::strchr(".+-*/%&|^<>=@~", text[end - 1]) != nullptr;
}

}  // namespace

Normalized normalize_grammar_gaps(std::string_view text) {
    Normalized out{std::string(text), {}, 0};
    int depth = 0;
    std::size_t line_begin = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '#') {
            while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
            continue;
        }
        if (c == '\'' || c == '"') {
            const bool triple = i + 2 < text.size() && text[i + 1] == c && text[i + 2] == c;
            std::size_t j = i + (triple ? 3 : 1);
            for (; j < text.size(); ++j) {
                if (text[j] == '\\') {
                    ++j;
                } else if (!triple && text[j] == '\n') {
                    break;  // an unclosed one-line string: stop there, as the tokenizer would
                } else if (text[j] == c && (!triple || (j + 2 < text.size() && text[j + 1] == c && text[j + 2] == c))) {
                    j += triple ? 2 : 0;
                    break;
                }
            }
            for (std::size_t k = i; k < j && k < text.size(); ++k) {
                if (text[k] == '\n') line_begin = k + 1;
            }
            i = j < text.size() && text[j] == '\n' ? j - 1 : j;
            continue;
        }
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        if (c == '*' && starred_bracket(text, i)) {
            out.text[i] = ' ';
            out.starred.push_back(static_cast<std::uint32_t>(i));
        }
        if (c == '\n') {
            if (depth > 0 && ends_in_operator(text, line_begin, i)) {
                out.text[i] = ' ';
                if (i > 0 && text[i - 1] == '\r') out.text[i - 1] = ' ';
                ++out.joined;
            }
            line_begin = i + 1;
        }
    }
    return out;
}

}  // namespace graphmend::syntax

// Python literals read off the tree: see include/graphmend/syntax.hpp.
#include <cstdint>
#include <limits>

#include "graphmend/syntax.hpp"

namespace graphmend::syntax {

namespace {

int digit_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The value of an integer literal's digits, as Python 3's tokenizer reads them:
//   "0" ("x" | "o" | "b") (["_"] digit)+  |  nonzero digit (["_"] digit)*  |  "0"+ (["_"] "0")*
// with either case of prefix and hex digit; nullopt for other text or a value past UINT64_MAX.
std::optional<std::uint64_t> magnitude(std::string_view s) {
    unsigned base = 10;
    std::size_t i = 0;
    if (s.size() >= 2 && s[0] == '0') {
        const char p = s[1];
        base = (p == 'x' || p == 'X') ? 16 : (p == 'o' || p == 'O') ? 8 : (p == 'b' || p == 'B') ? 2 : 10;
        if (base != 10) i = 2;
    }
    std::uint64_t value = 0;
    bool digits = false;
    bool underscore = false;  // the last character read was `_`
    for (; i < s.size(); ++i) {
        if (s[i] == '_') {
            // One `_` between digits, or right after a prefix.
            if (underscore || (!digits && base == 10)) return std::nullopt;
            underscore = true;
            continue;
        }
        const int d = digit_value(s[i]);
        if (d < 0 || static_cast<unsigned>(d) >= base) return std::nullopt;
        if (value > (std::numeric_limits<std::uint64_t>::max() - static_cast<unsigned>(d)) / base) return std::nullopt;
        value = value * base + static_cast<unsigned>(d);
        digits = true;
        underscore = false;
    }
    if (!digits || underscore) return std::nullopt;
    if (base == 10 && s[0] == '0' && value != 0) return std::nullopt;  // "010": Python 3 refuses it
    return value;
}

constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

}  // namespace

std::optional<std::int64_t> parse_int(std::string_view literal) {
    const auto m = magnitude(literal);
    if (!m || *m > kMax) return std::nullopt;
    return static_cast<std::int64_t>(*m);
}

std::optional<std::int64_t> int_value(const Node& node) {
    // A loop, not recursion: any number of `-` is safe.
    bool negative = false;
    Node n = without_parens(node);
    while (n.is("unary_operator") && n.field("operator").is("-")) {
        negative = !negative;
        n = without_parens(n.field("argument"));
    }
    if (!n.is("integer")) return std::nullopt;
    const auto m = magnitude(n.text());
    if (!m || *m > kMax + (negative ? 1 : 0)) return std::nullopt;
    // -(m - 1) - 1: the most negative value (m = 2**63) without overflow.
    return negative ? -static_cast<std::int64_t>(*m - 1) - 1 : static_cast<std::int64_t>(*m);
}

}  // namespace graphmend::syntax

// Suppression comments: see include/graphmend/suppressions.hpp.
#include "graphmend/suppressions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "graphmend/rule.hpp"
#include "graphmend/runtime_module.hpp"

namespace graphmend {

namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\r' || c == '\n'; }

std::size_t skip_blanks(std::string_view s, std::size_t i) {
    while (i < s.size() && blank(s[i])) ++i;
    return i;
}

bool word_at(std::string_view s, std::size_t i, std::string_view word) {
    if (s.size() - i < word.size()) return false;
    for (std::size_t k = 0; k < word.size(); ++k) {
        if (std::tolower(static_cast<unsigned char>(s[i + k])) != word[k]) return false;
    }
    return true;
}

// A code at `i` (capital letters then digits, like ruff's): its length, or 0.
std::size_t code_length(std::string_view s, std::size_t i) {
    std::size_t k = i;
    while (k < s.size() && std::isupper(static_cast<unsigned char>(s[k]))) ++k;
    const std::size_t letters = k - i;
    while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
    return letters > 0 && k - i > letters ? k - i : 0;
}

// The codes after `noqa:` at `i`, separated by commas and/or blanks, up to anything else.
std::vector<std::string> codes_at(std::string_view s, std::size_t i) {
    std::vector<std::string> out;
    for (;;) {
        while (i < s.size() && (blank(s[i]) || s[i] == ',')) ++i;
        const std::size_t n = code_length(s, i);
        if (n == 0) return out;
        out.emplace_back(s.substr(i, n));
        i += n;
    }
}

}  // namespace

std::optional<Noqa> parse_noqa(std::string_view comment, bool& malformed) {
    malformed = false;
    for (std::size_t hash = comment.find('#'); hash != std::string_view::npos; hash = comment.find('#', hash + 1)) {
        const std::size_t i = skip_blanks(comment, hash + 1);
        if (!word_at(comment, i, "noqa")) continue;
        const std::size_t after = i + 4;
        const std::size_t colon = skip_blanks(comment, after);
        if (colon < comment.size() && comment[colon] == ':') {
            Noqa n{false, codes_at(comment, colon + 1)};
            if (!n.codes.empty()) return n;
            malformed = true;
            continue;
        }
        // `# noqa` then the end, a blank or another comment: bare; `# noqabc` is no directive.
        if (after == comment.size() || blank(comment[after]) || comment[after] == '#') return Noqa{true, {}};
    }
    return std::nullopt;
}

bool is_skip_file(std::string_view comment) {
    std::size_t i = skip_blanks(comment, 1);
    if (comment.empty() || comment[0] != '#' || !word_at(comment, i, "graphmend")) return false;
    i = skip_blanks(comment, i + 9);
    if (i >= comment.size() || comment[i] != ':') return false;
    i = skip_blanks(comment, i + 1);
    if (!word_at(comment, i, "skip-file")) return false;
    return skip_blanks(comment, i + 9) == comment.size();
}

bool Suppressions::suppresses(std::uint32_t line, std::string_view code) const {
    const auto it = noqa.find(line);
    if (it == noqa.end()) return false;
    const auto& codes = it->second.codes;
    return it->second.all || std::find(codes.begin(), codes.end(), code) != codes.end();
}

namespace {

// `# graphmend: ...` that is not skip-file: a directive graphmend does not know. The marker
// of the runtime's fallback lines (runtime_module::kConditionUnmet) is known: it reaches
// user files with the runtime's blocks, and it asks for nothing.
bool unknown_directive(std::string_view comment) {
    if (comment == runtime_module::kConditionUnmet) return false;
    const std::size_t i = skip_blanks(comment, 1);
    if (!word_at(comment, i, "graphmend")) return false;
    const std::size_t colon = skip_blanks(comment, i + 9);
    return colon < comment.size() && comment[colon] == ':';
}

// Whether only blanks precede the comment on its line.
bool own_line(const syntax::Node& comment) {
    const auto& src = comment.source();
    const std::string_view before = src.slice(src.line_start(comment.position().line), comment.begin());
    return std::all_of(before.begin(), before.end(), blank);
}

}  // namespace

Suppressions find_suppressions(const syntax::Tree& tree, const std::string& path) {
    Suppressions out;
    const std::string& text = tree.source().text();
    // Most files hold neither word: no walk then.
    const bool any = std::search(text.begin(), text.end(), "noqa", "noqa" + 4, [](char a, char b) {
                         return std::tolower(static_cast<unsigned char>(a)) == b;
                     }) != text.end() ||
                     std::search(text.begin(), text.end(), "graphmend", "graphmend" + 9, [](char a, char b) {
                         return std::tolower(static_cast<unsigned char>(a)) == b;
                     }) != text.end();
    if (!any) return out;
    syntax::walk(tree.root(), [&](const syntax::Node& n) {
        if (!n.is("comment")) return true;
        const std::string_view body = n.text();
        const std::uint32_t line = n.position().line;
        if (is_skip_file(body)) {
            if (own_line(n)) {
                out.skip_file = true;
            } else {
                out.warnings.push_back(fmt::format("{}:{}: `# graphmend: skip-file` applies only on a line of its own; "
                                                   "ignored",
                                                   path, line));
            }
            return false;
        }
        if (unknown_directive(body)) {
            out.warnings.push_back(fmt::format("{}:{}: unknown directive `{}`; ignored", path, line, body));
            return false;
        }
        bool malformed = false;
        if (auto noqa = parse_noqa(body, malformed)) {
            out.noqa[line] = std::move(*noqa);
        } else if (malformed) {
            const auto& registry = rules::registry();  // the example: the second rule's code, then the first's
            out.warnings.push_back(fmt::format("{}:{}: `# noqa:` without codes (e.g. `# noqa: {}, {}`); ignored", path,
                                               line, registry.at(1)->info().code, registry.at(0)->info().code));
        }
        return false;
    });
    return out;
}

}  // namespace graphmend

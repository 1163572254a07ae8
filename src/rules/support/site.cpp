// Building sites: see src/rules/support/site.hpp.
#include "site.hpp"

#include <fmt/format.h>


namespace graphmend::rules {

using syntax::Node;

Site new_site(const RuleInfo& info, const Node& node, std::string what, std::string graph_break) {
    Site site;
    site.rule = std::string(info.name);
    site.code = std::string(info.code);
    site.where = node.position();
    site.begin = node.begin();
    site.end = node.end();
    site.what = std::move(what);
    site.graph_break = std::move(graph_break);
    return site;
}

std::string one_line(std::string_view text, Blanks blanks, std::size_t longest) {
    std::string out;
    for (char c : text) {
        const bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\n';
        if (blanks == Blanks::Keep || !blank || out.empty() || out.back() != ' ') out += blank ? ' ' : c;
    }
    if (out.size() > longest) out = out.substr(0, 57) + "...";
    return out;
}

std::string construct_name(const Node& node) {
    static constexpr syntax::TypeRow<std::string_view> kNames[]{
        {"assert_statement", "an `assert`"},
        {"await", "an `await`"},
        {"break_statement", "a `break`"},
        {"class_definition", "a nested `class`"},
        {"continue_statement", "a `continue`"},
        {"decorated_definition", "a nested decorated `def`"},
        {"delete_statement", "a `del`"},
        {"exec_statement", "an `exec`"},
        {"for_statement", "a `for` loop"},
        {"function_definition", "a nested `def`"},
        {"future_import_statement", "a `from __future__ import`"},
        {"global_statement", "a `global` declaration"},
        {"if_statement", "an `if`"},
        {"import_from_statement", "an import"},
        {"import_statement", "an import"},
        {"lambda", "a `lambda`"},
        {"match_statement", "a `match`"},
        {"named_expression", "a `:=` expression"},
        {"nonlocal_statement", "a `nonlocal` declaration"},
        {"pass_statement", "a `pass`"},
        {"print_statement", "a Python 2 `print` statement"},
        {"raise_statement", "a `raise`"},
        {"return_statement", "a `return`"},
        {"try_statement", "a `try`"},
        {"type_alias_statement", "a `type` alias"},
        {"while_statement", "a `while` loop"},
        {"with_statement", "a `with` block"},
        {"yield", "a `yield`"},
    };
    if (const auto* name = syntax::row_for(kNames, node)) return std::string(*name);
    return fmt::format("`{}`", one_line(node.text().substr(0, node.text().find('\n')), Blanks::Fold, 40));
}

Node call_argument(const Node& call, std::size_t position, std::string_view keyword) {
    std::size_t at = 0;
    for (const Node& a : call.field("arguments").named_children()) {
        if (a.is("keyword_argument")) {
            if (a.field("name").text() == keyword) return a.field("value");
        } else if (!a.is("comment") && at++ == position) {
            return a;
        }
    }
    return Node();
}

std::string indent_of(const Node& node) {
    const auto& src = node.source();
    return std::string(src.text().substr(src.line_start(node.position().line), node.position().col - 1));
}

std::string keeping_lines(const Node& stmt, std::string replacement) {
    const std::string eol(stmt.source().eol());
    const std::string indent = indent_of(stmt);
    syntax::walk(stmt, [&](const Node& c) {
        if (c.is("comment")) replacement += eol + indent + std::string(c.text());
        return true;
    });
    for (auto n = syntax::count_newlines(replacement); n < syntax::count_newlines(stmt.text()); ++n) {
        replacement += eol;
    }
    return replacement;
}

}  // namespace graphmend::rules

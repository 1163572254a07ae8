// Building sites: see include/graphmend/site.hpp.
#include "graphmend/site.hpp"

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

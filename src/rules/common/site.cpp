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

std::optional<bool> value_when_traced(const Node& test) {
    const Node e = syntax::without_parens(test);
    if (e.is("not_operator")) {
        const auto v = value_when_traced(e.field("argument"));
        return v ? std::optional<bool>(!*v) : std::nullopt;
    }
    if (e.is("boolean_operator")) {
        const auto left = value_when_traced(e.field("left"));
        const bool is_and = e.field("operator").text() == "and";
        if (left && *left != is_and) return left;  // false and ..., true or ...: settled
        if (left) return value_when_traced(e.field("right"));
        return std::nullopt;
    }
    if (!e.is("call") || !e.field("arguments").named_children().empty()) return std::nullopt;
    const std::string_view fn = e.field("function").text();
    const auto dot = fn.rfind('.');
    const std::string_view name = dot == std::string_view::npos ? fn : fn.substr(dot + 1);
    if (name == "is_compiling" || name == "is_torchdynamo_compiling" || name == "is_dynamo_compiling") return true;
    if (name == "is_scripting") return false;
    return std::nullopt;
}

std::vector<Node> untraced_parts(const Node& if_statement) {
    if (!if_statement.is("if_statement")) return {};
    const auto v = value_when_traced(if_statement.field("condition"));
    if (!v) return {};
    std::vector<Node> parts{if_statement.field("condition")};
    if (!*v) {
        parts.push_back(if_statement.field("consequence"));
    } else {
        for (const Node& alt : if_statement.children()) {
            if (alt.is("elif_clause") || alt.is("else_clause")) parts.push_back(alt);
        }
    }
    return parts;
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

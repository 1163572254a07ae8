// Deferred message arguments: see src/rules/support/lazy_message.hpp.
#include "lazy_message.hpp"

#include <fmt/format.h>

#include <set>
#include <vector>

#include "graphmend/runtime_sources.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

bool is_fstring(const Node& n) {
    if (!n.is("string") || n.child_count() == 0) return false;
    for (char c : n.child(0).text()) {
        if (c == 'f' || c == 'F') return true;
        if (c == '"' || c == '\'') break;
    }
    return false;
}

bool is_string_literal(const Node& n) {
    if (n.is("string")) return true;
    if (!n.is("concatenated_string")) return false;
    for (const Node& c : n.named_children()) {
        if (!c.is("string")) return false;
    }
    return true;
}

bool holds_fstring(const Node& n) {
    if (is_fstring(n)) return true;
    if (n.is("concatenated_string")) {
        for (const Node& c : n.named_children()) {
            if (is_fstring(c)) return true;
        }
    }
    return false;
}

std::string double_braces(std::string_view s) {
    std::string out;
    for (char c : s) {
        out += c;
        if (c == '{' || c == '}') out += c;
    }
    return out;
}

std::string deferred_or_text(const Node& n) {
    auto d = defer_message_expression(n);
    return d ? *d : std::string(n.text());
}

// The string prefix without its f/F: `rf"` -> `r"`.
std::string without_f(std::string_view start) {
    std::string out;
    for (char c : start) {
        if (c != 'f' && c != 'F') out += c;
    }
    return out;
}

// Appends one replacement field `{N...}` for an interpolation or a nested
// format_expression, pushing its value (and nested values) onto `args`.
void field_of(const Node& interp, std::string& tmpl, std::vector<std::string>& args) {
    const Node expr = interp.field("expression");
    const std::string_view src = interp.source().text();
    const std::size_t index = args.size();
    args.push_back(deferred_or_text(expr));
    std::string conversion;
    std::string spec;
    bool has_spec = false;
    bool debug_eq = false;
    std::uint32_t eq_end = 0;
    for (const Node& c : interp.children()) {
        if (c.is("=")) {
            debug_eq = true;
            eq_end = c.end();
        } else if (c.is("type_conversion")) {
            conversion = std::string(c.text());
        } else if (c.is("format_specifier")) {
            has_spec = true;
            std::uint32_t cursor = c.begin() + 1;  // after ':'
            for (const Node& part : c.children()) {
                if (part.is(":")) continue;
                if (part.is("format_expression")) {
                    spec += src.substr(cursor, part.begin() - cursor);
                    field_of(part, spec, args);
                    cursor = part.end();
                }
            }
            spec += src.substr(cursor, c.end() - cursor);
        }
    }
    if (debug_eq) {
        // `{expr=}` prints the expression's source text, `=`, and (by default) its repr.
        std::uint32_t text_end = eq_end;
        while (text_end < interp.end() && (src[text_end] == ' ' || src[text_end] == '\t')) ++text_end;
        tmpl += double_braces(src.substr(interp.begin() + 1, text_end - interp.begin() - 1));
        if (conversion.empty() && !has_spec) conversion = "!r";
    }
    tmpl += fmt::format("{{{}{}{}{}}}", index, conversion, has_spec ? ":" : "", spec);
}

// The str.format template of one string literal: a plain literal with its braces doubled,
// an f-string with its fields numbered.
void template_of(const Node& str, std::string& tmpl, std::vector<std::string>& args) {
    const std::string_view src = str.source().text();
    if (!is_fstring(str)) {
        tmpl += double_braces(str.text());
        return;
    }
    std::uint32_t cursor = str.begin();
    for (const Node& c : str.children()) {
        if (c.is("string_start")) {
            tmpl += without_f(c.text());
            cursor = c.end();
            continue;
        }
        tmpl += src.substr(cursor, c.begin() - cursor);
        if (c.is("interpolation")) {
            field_of(c, tmpl, args);
        } else {
            tmpl += c.text();
        }
        cursor = c.end();
    }
}

std::string lazy_call(std::string_view op, const std::vector<std::string>& operands) {
    std::string out = fmt::format("{}(\"{}\"", runtime::name::lazy, op);
    for (const auto& o : operands) out += ", " + o;
    return out + ")";
}

// `(a, b)` with each element deferred; separators and parentheses kept.
std::string deferred_container(const Node& n) {
    if (!n.is("tuple") && !n.is("parenthesized_expression")) return deferred_or_text(n);
    const std::string_view src = n.source().text();
    std::string out;
    std::uint32_t cursor = n.begin();
    for (const Node& c : n.named_children()) {
        if (c.is("comment")) continue;
        out += src.substr(cursor, c.begin() - cursor);
        out += deferred_or_text(c);
        cursor = c.end();
    }
    out += src.substr(cursor, n.end() - cursor);
    return out;
}

std::optional<std::string> rewrite(const Node& expr) {
    // `(f"...")`, a message in parentheses (speechbrain's asserts): the message inside.
    if (expr.is("parenthesized_expression")) {
        std::vector<Node> inner;
        for (const Node& c : expr.named_children()) {
            if (!c.is("comment")) inner.push_back(c);
        }
        // Comments inside are left out: the statement's rewrite puts its comments on lines of
        // their own (keeping_lines).
        if (inner.size() != 1) return std::nullopt;
        auto out = rewrite(inner[0]);
        if (!out) return out;
        return "(" + *out + ")";
    }
    if (holds_fstring(expr)) {
        std::string tmpl;
        std::vector<std::string> args;
        const std::string_view src = expr.source().text();
        if (expr.is("string")) {
            template_of(expr, tmpl, args);
        } else {
            std::uint32_t cursor = expr.begin();
            for (const Node& part : expr.named_children()) {
                tmpl += src.substr(cursor, part.begin() - cursor);
                template_of(part, tmpl, args);
                cursor = part.end();
            }
        }
        args.insert(args.begin(), tmpl);
        return lazy_call("fmt", args);
    }
    // "text " + str(t): a concatenation with a string literal or a deferred string.
    if (expr.is("binary_operator") && expr.field("operator").text() == "+") {
        const Node left = expr.field("left");
        const Node right = expr.field("right");
        auto stringy = [](const Node& n) {
            if (is_string_literal(n)) return true;
            if (n.is("binary_operator") && n.field("operator").text() == "+") return true;
            if (!n.is("call")) return false;
            const auto fn = n.field("function").text();
            return fn == "str" || fn == "repr" || fn == "format" || fn.ends_with(".format");
        };
        if (stringy(left) || stringy(right)) {
            auto l = defer_message_expression(left);
            auto r = defer_message_expression(right);
            if (l || r) {
                return lazy_call("+", {l ? *l : std::string(left.text()), r ? *r : std::string(right.text())});
            }
        }
    }
    if (expr.is("binary_operator") && expr.field("operator").text() == "%" &&
        is_string_literal(expr.field("left"))) {
        return lazy_call("%", {std::string(expr.field("left").text()), deferred_container(expr.field("right"))});
    }
    if (!expr.is("call")) return std::nullopt;
    const Node fn = expr.field("function");
    const Node arglist = expr.field("arguments");
    if (!arglist.is("argument_list")) return std::nullopt;
    std::vector<Node> args;
    for (const Node& a : arglist.named_children()) {
        if (a.is("comment")) continue;
        if (a.is("keyword_argument") || a.is("list_splat") || a.is("dictionary_splat")) return std::nullopt;
        args.push_back(a);
    }
    if (fn.is("attribute")) {
        const std::string_view attr = fn.field("attribute").text();
        const Node obj = fn.field("object");
        if ((attr == "item" || attr == "tolist") && args.empty()) {
            return lazy_call(attr, {std::string(obj.text())});
        }
        if (attr == "format" && is_string_literal(obj) && !holds_fstring(obj)) {
            std::vector<std::string> operands{std::string(obj.text())};
            for (const Node& a : args) operands.push_back(deferred_or_text(a));
            return lazy_call("fmt", operands);
        }
        return std::nullopt;
    }
    static const std::set<std::string_view> kConversions{"str", "repr", "ascii", "float", "int", "bool"};
    if (fn.is("identifier") && kConversions.contains(fn.text()) && args.size() == 1) {
        return lazy_call(fn.text(), {deferred_or_text(args[0])});
    }
    if (fn.is("identifier") && fn.text() == "format" && (args.size() == 1 || args.size() == 2)) {
        std::vector<std::string> operands{deferred_or_text(args[0])};
        if (args.size() == 2) operands.emplace_back(args[1].text());
        return lazy_call("format", operands);
    }
    return std::nullopt;
}

// The expressions of the interpolations of an f-string part (nested format fields too).
void interpolated(const Node& n, std::vector<Node>& out) {
    for (const Node& c : n.named_children()) {
        if (c.is("interpolation") || c.is("format_expression")) {
            message_values(c.field("expression"), out);
            for (const Node& spec : c.named_children()) {
                if (spec.is("format_specifier")) interpolated(spec, out);
            }
        }
    }
}

}  // namespace

void message_values(const Node& expr, std::vector<Node>& out) {
    // As rewrite() takes the forms it defers; what it leaves is evaluated where the call is.
    if (expr.is("parenthesized_expression") || expr.is("tuple") || expr.is("list")) {
        for (const Node& c : expr.named_children()) {
            if (!c.is("comment")) message_values(c, out);
        }
        return;
    }
    if (holds_fstring(expr)) {
        if (expr.is("string")) {
            interpolated(expr, out);
        } else {
            for (const Node& part : expr.named_children()) interpolated(part, out);
        }
        return;
    }
    if (expr.is("binary_operator") && (expr.field("operator").text() == "+" || expr.field("operator").text() == "%") &&
        rewrite(expr)) {
        if (expr.field("operator").text() == "+") message_values(expr.field("left"), out);
        message_values(expr.field("right"), out);
        return;
    }
    if (expr.is("call") && rewrite(expr)) {
        const Node fn = expr.field("function");
        std::vector<Node> args;
        for (const Node& a : expr.field("arguments").named_children()) {
            if (!a.is("comment")) args.push_back(a);
        }
        if (fn.is("attribute") && (fn.field("attribute").text() == "item" || fn.field("attribute").text() == "tolist")) {
            out.push_back(fn.field("object"));
        } else if (fn.is("identifier") && fn.text() == "format") {
            message_values(args[0], out);
        } else {
            for (const Node& a : args) message_values(a, out);  // str(x), "...".format(a, b)
        }
        return;
    }
    out.push_back(expr);
}

std::optional<std::string> defer_message_expression(const Node& expr) {
    auto out = rewrite(expr);
    if (!out) return out;
    // Keep the line count: moved expressions keep their newlines; pad before the final ')'.
    const auto want = syntax::count_newlines(expr.text());
    const auto have = syntax::count_newlines(*out);
    std::string pad;
    for (auto i = have; i < want; ++i) pad += expr.source().eol();
    out->insert(out->size() - 1, pad);
    return out;
}

}  // namespace graphmend::rules

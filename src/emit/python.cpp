// Python text for the rewrites: see include/graphmend/emit.hpp.
#include "graphmend/emit.hpp"

namespace graphmend::emit {

namespace {

// `a, b`.
std::string joined(std::initializer_list<std::string_view> parts) {
    std::string out;
    bool first = true;
    for (const std::string_view p : parts) {
        if (!first) out += ", ";
        first = false;
        out += p;
    }
    return out;
}

}  // namespace

std::string call(std::string_view callee, std::initializer_list<std::string_view> arguments) {
    return std::string(callee) + "(" + joined(arguments) + ")";
}

std::string keyword(std::string_view name, std::string_view value) { return std::string(name) + "=" + std::string(value); }

std::string lambda(std::string_view body) { return "lambda: " + std::string(body); }

std::string lambda(std::initializer_list<std::string_view> parameters, std::string_view body) {
    if (parameters.size() == 0) return lambda(body);
    return "lambda " + joined(parameters) + ": " + std::string(body);
}

std::string walrus(std::string_view name, std::string_view value) {
    return "(" + std::string(name) + " := " + std::string(value) + ")";
}

std::string tuple(const std::vector<std::string>& items, bool trailing_comma) {
    std::string out = "(";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        out += items[i];
    }
    if (trailing_comma ? !items.empty() : items.size() == 1) out += ",";
    return out + ")";
}

std::string string(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '\\' || c == '"') out += '\\';
        out += c;
    }
    return out + "\"";
}

Style Style::at(const syntax::Node& stmt) {
    const auto& src = stmt.source();
    const std::string_view indent = src.slice(src.line_start(stmt.position().line), stmt.begin());
    return {std::string(src.eol()), indent.find('\t') != std::string_view::npos ? "\t" : "    "};
}

Lines& Lines::add(std::string_view statement) {
    if (started_) {
        text_ += style_.eol;
        text_ += indent_;
        for (std::size_t i = 0; i < depth_; ++i) text_ += style_.unit;
    }
    started_ = true;
    text_ += statement;
    return *this;
}

Lines& Lines::open(std::string_view header) {
    add(std::string(header) + ":");
    ++depth_;
    return *this;
}

Lines& Lines::close() {
    if (depth_ > 0) --depth_;
    return *this;
}

}  // namespace graphmend::emit

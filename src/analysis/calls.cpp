// Project name resolution used by the value analysis: which project function a call
// names, which class an expression names. See include/graphmend/analysis.hpp.
#include <set>

#include "graphmend/analysis.hpp"

namespace graphmend::analysis {

using syntax::Node;

std::optional<FunctionRef> Project::find_method(std::size_t file, const std::string& cls,
                                                const std::string& name) const {
    std::set<std::pair<std::size_t, std::string>> seen;
    std::vector<std::pair<std::size_t, std::string>> todo{{file, cls}};
    for (std::size_t i = 0; i < todo.size() && i < 64; ++i) {
        const auto c = todo[i];
        if (!seen.insert(c).second) continue;
        const auto& classes = files_[c.first].index.classes;
        const auto it = classes.find(c.second);
        if (it == classes.end()) continue;
        if (const auto m = it->second.methods.find(name); m != it->second.methods.end()) {
            return FunctionRef{c.first, m->second};
        }
        for (const auto& b : class_bases(c.first, c.second)) todo.push_back(b);
    }
    return std::nullopt;
}

std::optional<std::pair<std::size_t, std::string>> Project::class_named(std::size_t file, const Node& expr) const {
    const Symbol s = resolve_expr(file, expr);
    if (s.kind == Symbol::Class) return std::make_pair(s.file, s.name);
    return std::nullopt;
}

std::string Project::external_name(std::size_t file, const Node& expr) const {
    const Symbol s = resolve_expr(file, expr);
    return s.kind == Symbol::External ? s.name : std::string();
}

std::optional<FunctionRef> Project::callee(std::size_t file, const Node& call, const std::string& owner) const {
    const Node fn = call.field("function");
    if (fn.is("identifier")) {
        const Symbol s = resolve_name(file, std::string(fn.text()));
        if (s.kind == Symbol::Function) return FunctionRef{s.file, files_[s.file].index.functions.at(s.name)};
        return std::nullopt;
    }
    if (!fn.is("attribute")) return std::nullopt;
    const Node obj = fn.field("object");
    const std::string attr(fn.field("attribute").text());
    if ((obj.text() == "self" || obj.text() == "cls") && !owner.empty()) return find_method(file, owner, attr);
    if (obj.is("call") && obj.field("function").text() == "super" && !owner.empty()) {
        for (const auto& b : class_bases(file, owner)) {
            if (auto m = find_method(b.first, b.second, attr)) return m;
        }
        return std::nullopt;
    }
    const Symbol s = resolve_expr(file, obj);
    if (s.kind == Symbol::Module) {
        const auto& idx = files_[s.file].index;
        if (const auto it = idx.functions.find(attr); it != idx.functions.end()) return FunctionRef{s.file, it->second};
    } else if (s.kind == Symbol::Class) {
        return find_method(s.file, s.name, attr);
    }
    return std::nullopt;
}

}  // namespace graphmend::analysis

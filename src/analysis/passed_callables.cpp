// Project: callables passed as arguments. A function of the compiled scope that calls one of
// its parameters (`is_reversed = reverse_check(t)`) runs whatever its callers pass for it:
// when the call sites in scope pass functions the analysis knows (a module-level def, an
// imported one, a def of the caller, a lambda, `self.m`, or a parameter of the caller that its
// own callers fill), those functions run under torch.compile too, and the value analysis takes
// `reverse_check(t)` as a call of the one function every call site passes. See
// include/graphmend/analysis.hpp (PassedCallable, Project::passed_callable).
#include <filesystem>

#include <fmt/format.h>

#include "graphmend/analysis.hpp"
#include "scope_walk.hpp"

namespace graphmend::analysis {

using syntax::Node;

namespace {

constexpr int kMaxLevels = 16;  // parameters passed on through at most this many calls
constexpr int kMaxRounds = 8;   // rounds of the walk that find functions passed in turn

// The name a parameter binds (`x`, `x=1`, `x: T`, `x: T = 1`, `*args`, `**kw`), or "".
std::string parameter_name(const Node& param) {
    if (param.is("identifier")) return text(param);
    if (const Node name = param.field("name"); name.is("identifier")) return text(name);
    for (const Node& c : param.named_children()) {
        if (c.is("identifier")) return text(c);
    }
    return {};
}

// True when a function or lambda has a parameter `name`.
bool has_parameter(const Node& fn, const std::string& name) {
    const Node params = fn.field("parameters");
    if (!params) return false;
    for (const Node& p : params.named_children()) {
        if (parameter_name(p) == name) return true;
    }
    return false;
}

// True when the body of `fn` binds `name` (an assignment, a loop or with target, a def, del,
// global), outside nested functions, classes and lambdas.
bool rebinds(const Node& fn, const std::string& name) {
    bool found = false;
    syntax::walk(fn.field("body"), [&](const Node& n) {
        if (found) return false;
        if (n.is("function_definition") || n.is("class_definition")) {
            found = n.field("name").text() == name;
            return false;
        }
        if (n.is("lambda")) return false;
        Node target;
        if (n.is("assignment") || n.is("augmented_assignment") || n.is("for_statement") || n.is("for_in_clause")) {
            target = n.field("left");
        } else if (n.is("named_expression")) {
            target = n.field("name");
        } else if (n.is("as_pattern_target") || n.is("delete_statement") || n.is("global_statement") ||
                   n.is("nonlocal_statement")) {
            target = n;
        }
        if (target) {
            syntax::walk(target, [&](const Node& t) {
                found = found || (t.is("identifier") && t.text() == name);
                return !t.is("attribute") && !t.is("subscript");
            });
        }
        return !found;
    });
    return found;
}

// The def of `name` directly in the body of `fn` (not inside its nested functions or classes).
Node nested_def(const Node& fn, const std::string& name) {
    Node found;
    syntax::walk(fn.field("body"), [&](const Node& n) {
        if (found) return false;
        if (n.is("function_definition") && n.field("name").text() == name) found = n;
        return !n.is("function_definition") && !n.is("class_definition") && !n.is("lambda");
    });
    return found;
}

bool is_staticmethod(const Node& fn) {
    const Node decorated = fn.parent();
    if (!decorated.is("decorated_definition")) return false;
    for (const Node& d : decorated.named_children()) {
        if (d.is("decorator") && d.text() == "@staticmethod") return true;
    }
    return false;
}

// What a passed function is called in a sentence: `name`, or "a lambda at line N".
std::string spelled(const FunctionRef& f) {
    if (f.node.is("lambda")) return fmt::format("a lambda at line {}", f.node.position().line);
    return fmt::format("`{}`", f.node.field("name").text());
}

}  // namespace

std::string PassedCallable::why_unknown(std::string_view param) const {
    if (!unknown.empty()) return unknown;
    if (callees.size() > 1) {
        std::string names;
        for (const FunctionRef& c : callees) names += (names.empty() ? "" : ", ") + spelled(c);
        return fmt::format("the calls pass different functions for `{}` ({})", param, names);
    }
    if (callees.empty()) return fmt::format("no call in scope passes a function for `{}`", param);
    return {};
}

const PassedCallable* Project::passed_callable(std::size_t file, std::uint32_t function_begin,
                                               const std::string& param) const {
    const auto it = passed_.find({file, function_begin, param});
    return it == passed_.end() ? nullptr : &it->second;
}

void Project::ScopeWalk::note_call(const FunctionRef& ref, const Node& call) {
    const Node fn = call.field("function");
    const Node name = fn.is("attribute") ? fn.field("attribute") : fn;
    if (!name.is("identifier")) return;
    call_sites[text(name)].emplace_back(ref, call);
    if (!fn.is("identifier") || !ref.node.is("function_definition") || !has_parameter(ref.node, text(fn))) return;
    // A lambda's own parameter of that name, or a function that rebinds it: not the argument.
    for (Node e = enclosing_function(call); e && !(e == ref.node); e = enclosing_function(e)) {
        if (has_parameter(e, text(fn))) return;
    }
    if (rebinds(ref.node, text(fn))) return;
    auto& entry = called_params[{ref.file, ref.node.begin()}];
    entry.first = ref;
    entry.second.insert(text(fn));
}

void Project::ScopeWalk::follow_passed_callables() {
    for (int round = 0; round < kMaxRounds && !called_params.empty(); ++round) {
        passed_memo.clear();
        const std::size_t before = walked.size();
        // A copy: resolving reads call_sites only, but adding walks nothing until run().
        const auto called = called_params;
        for (const auto& [key, entry] : called) {
            for (const std::string& param : entry.second) {
                for (const FunctionRef& c : passed(entry.first, param, 0).callees) {
                    if (c.node.is("function_definition")) add(c.file, c.node);
                }
            }
        }
        run();
        if (walked.size() == before) break;
    }
    passed_memo.clear();  // the call sites of the last round's walk too
    p.passed_.clear();
    for (const auto& [key, entry] : called_params) {
        for (const std::string& param : entry.second) {
            p.passed_.emplace(std::make_tuple(key.first, key.second, param), passed(entry.first, param, 0));
        }
    }
}

const PassedCallable& Project::ScopeWalk::passed(const FunctionRef& fn, const std::string& param, int depth) {
    const auto key = std::make_tuple(fn.file, fn.node.begin(), param);
    if (const auto it = passed_memo.find(key); it != passed_memo.end()) return it->second;
    // Read while it is being resolved, it is a parameter passed on in a cycle of calls.
    PassedCallable& out = passed_memo[key];
    out.unknown = fmt::format("`{}` is passed on in a cycle of calls", param);
    PassedCallable result;
    if (depth > kMaxLevels) {
        result.unknown = fmt::format("`{}` is passed on through more than {} calls", param, kMaxLevels);
        return out = result;
    }
    // Where a call puts the parameter: its position among the positional ones (none after
    // `*` or `*args`), and its default.
    const auto params = fn.node.field("parameters").named_children();
    std::size_t index = 0;
    bool positional = true;
    bool found = false;
    Node fallback;
    for (const Node& q : params) {
        if (q.is("comment") || q.is("positional_separator")) continue;
        if (q.is("keyword_separator") || q.is("list_splat_pattern") || q.is("dictionary_splat_pattern")) {
            positional = false;
            continue;
        }
        if (parameter_name(q) == param) {
            found = true;
            fallback = q.field("value");
            break;
        }
        ++index;
    }
    const bool method = !p.owner_class(fn.node).empty() && !params.empty() && !is_staticmethod(fn.node) &&
                        (parameter_name(params.front()) == "self" || parameter_name(params.front()) == "cls");
    const std::string name = text(fn.node.field("name"));
    const auto sites = call_sites.find(name);
    for (std::size_t i = 0; found && sites != call_sites.end() && i < sites->second.size(); ++i) {
        const auto [caller, call] = sites->second[i];  // a copy: passed() below may add sites
        const auto target = p.callee(caller.file, call, p.owner_class(caller.node));
        if (!target || target->file != fn.file || target->node.begin() != fn.node.begin()) continue;
        ++result.sites;
        const std::string where = fmt::format("{}:{}", std::filesystem::path(p.files_[caller.file].path).filename().string(),
                                              call.position().line);
        // `obj.m(...)` fills `self`; `Class.m(obj, ...)` and a plain call do not.
        const Node callee_expr = call.field("function");
        const bool bound = method && callee_expr.is("attribute") &&
                           p.resolve_expr(caller.file, callee_expr.field("object")).kind != Symbol::Class;
        if (bound && index == 0) {
            result.unknown = fmt::format("the call at {} passes `{}` as `self`", where, param);
            continue;
        }
        const std::size_t want = index - (bound ? 1 : 0);
        Node arg;
        Node splat;
        std::size_t k = 0;
        const Node args = call.field("arguments");
        for (const Node& a : args.is("argument_list") ? args.named_children() : std::vector<Node>{}) {
            if (a.is("comment")) continue;
            if (a.is("keyword_argument")) {
                if (a.field("name").text() == param) arg = a.field("value");
            } else if (a.is("list_splat") || a.is("dictionary_splat")) {
                splat = a;
            } else if (!splat && positional && k++ == want) {
                arg = a;
            }
        }
        if (arg) {
            Node context = enclosing_function(call);
            callable_of(caller.file, arg, context, result, depth);
        } else if (splat) {
            if (result.unknown.empty()) {
                result.unknown = fmt::format("the call at {} passes `{}` for `{}`", where, splat.text(), param);
            }
        } else if (fallback) {
            callable_of(fn.file, fallback, enclosing_function(fn.node), result, depth);
        } else if (result.unknown.empty()) {
            result.unknown = fmt::format("the call at {} passes nothing for `{}`", where, param);
        }
    }
    return out = result;
}

void Project::ScopeWalk::callable_of(std::size_t file, const Node& arg, const Node& context, PassedCallable& out,
                                     int depth) {
    const Node expr = syntax::without_parens(arg);
    auto add_callee = [&](const FunctionRef& c) {
        for (const FunctionRef& known : out.callees) {
            if (known.file == c.file && known.node.begin() == c.node.begin()) return;
        }
        out.callees.push_back(c);
    };
    auto unknown = [&](const std::string& why) {
        if (out.unknown.empty()) {
            out.unknown = fmt::format("{}:{} passes `{}`, {}",
                                      std::filesystem::path(p.files_[file].path).filename().string(),
                                      expr.position().line, expr.text(), why);
        }
    };
    if (expr.is("lambda")) {
        add_callee({file, expr});
        return;
    }
    if (expr.is("identifier")) {
        const std::string name = text(expr);
        for (Node e = context; e; e = enclosing_function(e)) {
            if (e.is("lambda")) {
                if (has_parameter(e, name)) return unknown("a parameter of a lambda");
                continue;
            }
            if (has_parameter(e, name)) {
                // A parameter passed on: what the callers of `e` pass for it.
                const PassedCallable& outer = passed({file, e}, name, depth + 1);
                for (const FunctionRef& c : outer.callees) add_callee(c);
                if (!outer.unknown.empty() && out.unknown.empty()) out.unknown = outer.unknown;
                if (outer.sites == 0) {
                    unknown(fmt::format("a parameter of `{}`, for which no call in scope passes a function",
                                        e.field("name").text()));
                }
                return;
            }
            if (const Node def = nested_def(e, name)) return add_callee({file, def});
            if (rebinds(e, name)) return unknown("a local the analysis does not follow");
        }
        const Symbol s = p.resolve_name(file, name);
        if (s.kind == Symbol::Function) return add_callee({s.file, function_of(s.file, s.name)});
        return unknown("which is not a function of the inputs");
    }
    if (expr.is("attribute")) {
        const Node obj = expr.field("object");
        const std::string attr = text(expr.field("attribute"));
        Node def = context;
        while (def && !def.is("function_definition")) def = enclosing_function(def);
        const std::string owner = def ? p.owner_class(def) : std::string();
        if ((obj.text() == "self" || obj.text() == "cls") && !owner.empty()) {
            for (const auto& [f, cls] : p.ancestors(file, owner)) p.load({f});
            if (const auto m = p.find_method(file, owner, attr)) return add_callee(*m);
            return unknown("which is no method of the class");
        }
        const Symbol s = p.resolve_expr(file, obj);
        if (s.kind == Symbol::Module && p.files_[s.file].index.functions.contains(attr)) {
            return add_callee({s.file, function_of(s.file, attr)});
        }
        return unknown("which is not a function of the inputs");
    }
    unknown("which the analysis does not follow to a function");
}

}  // namespace graphmend::analysis

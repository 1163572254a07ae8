// The value analysis: the summaries of the in-scope functions and the interprocedural fixed
// point over them, and the joins of values. Expressions are evaluated in value_eval.cpp,
// calls in value_calls.cpp, isinstance narrowing in value_narrowing.cpp. See
// include/graphmend/values.hpp.
#include "graphmend/values.hpp"

#include "graphmend/liveness.hpp"
#include "values_internal.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <set>
#include <string_view>

namespace graphmend::analysis {

using syntax::Node;

namespace {

// syntax::walk over a function's body without the parts of `if` statements Dynamo never
// traces (untraced_parts): their calls pass no arguments and their returns return nothing
// while the function is traced.
template <typename Visit>
void walk_traced(const Node& body, Visit&& visit) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> skipped;
    syntax::walk(body, [&](const Node& n) {
        for (const auto& [b, e] : skipped) {
            if (n.begin() == b && n.end() == e) return false;
        }
        if (n.is("if_statement")) {
            for (const Node& p : untraced_parts(n)) skipped.emplace_back(p.begin(), p.end());
        }
        return visit(n);
    });
}

// The value `self.NAME = right`, in the __init__ of a class of file `f`, gives the attribute.
Value attribute_value(const Project& project, std::size_t f, const Node& right) {
    Value v;
    if (const Value lit = literal(right); lit.kinds) {
        v = lit;
    } else if (right.is("call")) {
        const Node fn = right.field("function");
        const std::string ext = project.external_name(f, fn);
        if (ext == "torch.nn.Parameter" || ext == "torch.nn.parameter.Parameter") {
            v = Value::of(kTensor);
        } else if (ext.starts_with("torch.nn.") && !ext.starts_with("torch.nn.functional")) {
            v = Value::of(kModule);
            v.cls = ext;
        } else if (auto c = project.class_named(f, fn); c && project.is_module_class(c->first, c->second)) {
            v = Value::of(kModule);
            v.cls = fmt::format("{}:{}", c->first, c->second);
        } else if (ext.starts_with("torch.") && !ext.starts_with("torch.nn")) {
            // torch.finfo(...), torch.device(...), torch.Size(...): no tensor.
            v = torch_static_value(ext.substr(ext.rfind('.') + 1)).value_or(Value::of(kTensor));
        } else {
            v = Value::of(kUnknown);
        }
    } else if (right.is("binary_operator") || right.is("unary_operator")) {
        bool numeric = true;
        syntax::walk(right, [&](const Node& c) {
            if (c.is("identifier") || c.is("attribute") || c.is("call")) numeric = false;
            return numeric;
        });
        v = Value::of(numeric ? kNumber : kUnknown);
    } else {
        v = Value::of(kUnknown);
    }
    return v;
}

// The value an annotation names (`torch.Tensor`, `Optional[torch.FloatTensor]`, `bool`,
// `Union[Cache, List[Tensor]]`: the members of Optional / Union, each a tensor only when it
// is a tensor class itself, not a container of them).
Value annotation_value(const Node& type) {
    std::string t(type.text());
    std::erase_if(t, [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; });
    if (t.size() > 1 && (t.front() == '"' || t.front() == '\'')) t = t.substr(1, t.size() - 2);
    std::vector<std::string> members;
    auto split = [&](const std::string& inner) {
        int depth = 0;
        std::string cur;
        for (char c : inner) {
            if (c == '[') ++depth;
            if (c == ']') --depth;
            if (c == ',' && depth == 0) {
                members.push_back(cur);
                cur.clear();
            } else {
                cur += c;
            }
        }
        members.push_back(cur);
    };
    bool optional = false;
    for (const char* wrapper : {"Optional[", "typing.Optional[", "Union[", "typing.Union["}) {
        if (t.starts_with(wrapper) && t.ends_with("]")) {
            optional = std::string_view(wrapper).find("Optional") != std::string_view::npos;
            split(t.substr(std::string_view(wrapper).size(), t.size() - std::string_view(wrapper).size() - 1));
            break;
        }
    }
    if (members.empty()) {
        if (t.find('|') != std::string::npos) {
            std::string cur;
            for (char c : t + "|") {
                if (c == '|') {
                    members.push_back(cur);
                    cur.clear();
                } else {
                    cur += c;
                }
            }
        } else {
            members.push_back(t);
        }
    }
    Value v;
    if (optional) v.kinds |= kNone;
    for (const auto& m : members) {
        if (m.find('[') == std::string::npos && m.ends_with("Tensor")) {
            v.kinds |= kTensor;
        } else if (m == "None") {
            v.kinds |= kNone;
        } else if (m == "bool") {
            v.kinds |= kBool;
        } else if (m == "int" || m == "float") {
            v.kinds |= kNumber;
        } else if (m == "str") {
            v.kinds |= kStr;
        } else {
            v.kinds |= kUnknown;
        }
    }
    return v;
}

// Parameters named as switches (`output_attentions`, `use_cache`, `return_dict`,
// `is_causal`): Python flags, whatever a (sometimes wrong) annotation says.
bool is_flag_name(const std::string& name) {
    for (const char* prefix : {"output_", "use_", "return_", "is_", "has_", "do_", "enable_", "skip_"}) {
        if (name.starts_with(prefix)) return true;
    }
    return name.ends_with("_flag");
}

}  // namespace

Value join(const Value& a, const Value& b) {
    if (a.kinds == 0) return b;
    if (b.kinds == 0) return a;
    Value v;
    v.kinds = a.kinds | b.kinds;
    v.data = a.data || b.data;
    if (a.items.size() == b.items.size() && !a.items.empty()) {
        for (std::size_t i = 0; i < a.items.size(); ++i) v.items.push_back(join(a.items[i], b.items[i]));
    }
    if (a.cls == b.cls) v.cls = a.cls;
    return v;
}

std::string describe(const Value& v) {
    static const std::pair<Kind, const char*> names[] = {
        {kTensor, "tensor"}, {kNumber, "number"}, {kBool, "bool"}, {kNone, "None"}, {kStr, "str"},
        {kSize, "size"},     {kModule, "module"}, {kSeq, "tuple"}, {kOther, "object"}, {kUnknown, "unknown"}};
    std::vector<std::string> parts;
    for (const auto& [k, name] : names) {
        if (v.kinds & k) parts.emplace_back(name);
    }
    if (parts.empty()) return "nothing";
    return fmt::format("{}", fmt::join(parts, " or "));
}

Value join_items(const std::vector<Value>& items) {
    Value v;
    for (const auto& i : items) v = join(v, i);
    return v;
}

Values::Values(const Project& project) : project_(project) {
    const auto& files = project.files();
    for (std::size_t f = 0; f < files.size(); ++f) {
        read_attributes(f);
        for (const Node& fn : project.scope_of(f)) summaries_.emplace(std::make_pair(f, fn.begin()), summarise(f, fn));
    }
    // The functions that call what they compile (`step = torch.compile(scheduler.step)`, then
    // `step(out, t, sample)`): analysed for what they pass, never checked by a rule.
    for (const FunctionRef& d : project.drivers()) summaries_.emplace(std::make_pair(d.file, d.node.begin()), summarise(d.file, d.node));
    // Functions called from another analysed function take their parameters' values from
    // the call sites; only the others (entry points) assume tensors for bare parameters.
    for (auto& [key, s] : summaries_) {
        Frame fr{s.file, &s, nullptr, &s.locals};
        for (const Node& n : s.calls) {
            if (const Summary* callee = callee_of(fr, n, nullptr); callee && callee != &s) {
                called_.insert({callee->file, callee->fn.begin()});
            }
        }
    }
    for (auto& [key, s] : summaries_) seed_params(s);
    solving_ = true;
    solve();
    solving_ = false;
    solve();
    if (const char* dbg = std::getenv("GRAPHMEND_DEBUG_VALUES")) {  // developer aid: dump one function's names
        for (const auto& [key, s] : summaries_) {
            if (s.fn.field("name").text() != dbg) continue;
            fmt::print(stderr, "{}:{} {}.{}\n", project.files()[s.file].path, s.fn.position().line, s.owner, dbg);
            for (const auto& [name, v] : s.env) fmt::print(stderr, "  {} = {}{}\n", name, describe(v), v.data ? " (data)" : "");
        }
    }
}

void Values::read_attributes(std::size_t f) {
    const Project& project = project_;
    // Attributes of every class: `self.NAME = ...` and register_buffer in __init__.
    for (const auto& [cls, info] : project.files()[f].index.classes) {
        auto& attrs = attributes_[{f, cls}];
        const auto init = info.methods.find("__init__");
        if (init == info.methods.end()) continue;
        syntax::walk(init->second.field("body"), [&](const Node& n) {
            if (n.is("call")) {
                if (auto c = project.class_named(f, n.field("function")); c && !(c->first == f && c->second == cls) &&
                                                                           project.is_module_class(c->first, c->second)) {
                    submodules_.emplace(c->first, c->second);
                }
            }
            if (n.is("call") && n.field("function").text() == "self.register_buffer") {
                const auto args = n.field("arguments").named_children();
                if (!args.empty() && args[0].is("string")) {
                    const std::string name(args[0].text());
                    if (name.size() > 2) attrs[name.substr(1, name.size() - 2)] = Value::of(kTensor | kNone);
                }
            }
            if (!n.is("assignment")) return true;
            const Node left = n.field("left");
            const Node right = n.field("right");
            if (!left.is("attribute") || left.field("object").text() != "self" || !right) return true;
            const std::string attr = text(left.field("attribute"));
            const Value v = attribute_value(project, f, right);
            attrs[attr] = join(attrs[attr], v);
            return true;
        });
    }
}

Values::Summary Values::summarise(std::size_t f, const Node& fn) {
    Summary s;
    s.file = f;
    s.fn = fn;
    for (Node p = fn.parent(); p; p = p.parent()) {
        if (p.is("class_definition")) {
            s.owner = text(p.field("name"));
            break;
        }
        if (p.is("function_definition")) break;
    }
    if (const Node params = fn.field("parameters")) {
        for (const Node& p : params.named_children()) {
            Node name = p.is("identifier") ? p : p.field("name");
            if (!name && !p.named_children().empty()) name = p.named_children()[0];
            s.params.push_back(name && name.is("identifier") ? text(name) : std::string());
        }
    }
    s.locals = analysis::local_names(fn);
    s.reaching = analysis::reaching_assignments(fn);
    s.narrowed = isinstance_narrowing(fn);
    walk_traced(fn.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition")) return false;
        if (n.is("call")) s.calls.push_back(n);
        return true;
    });
    walk_traced(fn.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (n.is("assignment") || n.is("augmented_assignment") || n.is("named_expression") ||
            n.is("for_statement") || n.is("for_in_clause") || n.is("return_statement") || n.is("yield")) {
            s.bindings.push_back(n);
        }
        return true;
    });
    return s;
}

void Values::solve() {
    // Interprocedural fixed point: returns flow to callers, arguments to parameters. Each
    // project settles on its own: after the first round only the projects that changed are
    // analysed again (all of them when a package changed, since any project may call into a
    // package; a folder project's functions are called only from its own files). Joins are
    // monotone, so a project that did not change gives the same values again: skipping it
    // changes no result, and a batch of checkouts costs what its checkouts cost one by one.
    const auto& all_files = project_.files();
    bool all_active = true;
    std::set<std::string> active;
    for (int round = 0; round < 8; ++round) {
        std::set<std::size_t> changed;  // the files of the functions whose values changed
        auto is_active = [&](const Summary& s) { return all_active || active.contains(all_files[s.file].project); };
        for (auto& [key, s] : summaries_) {
            if (!is_active(s)) continue;
            const auto before_env = s.env;
            const Value before_ret = s.ret;
            analyse(s);
            if (s.env != before_env || !(s.ret == before_ret)) changed.insert(s.file);
        }
        // Arguments at every in-scope call site join into the callee's parameters.
        for (auto& [key, s] : summaries_) {
            if (is_active(s)) pass_arguments(s, changed);
        }
        std::set<std::string> changed_projects;
        bool package_changed = false;
        for (const std::size_t f : changed) {
            changed_projects.insert(all_files[f].project);
            package_changed = package_changed || !all_files[f].isolated;
        }
        if (changed_projects.empty()) break;
        all_active = package_changed;
        active = std::move(changed_projects);
    }
}

void Values::pass_arguments(const Summary& s, std::set<std::size_t>& changed) {
    Frame fr{s.file, &s, &s.env, &s.locals};
    for (const Node& n : s.calls) {
        Value module;
        const Summary* callee = callee_of(fr, n, &module);
        if (callee == nullptr) continue;
        auto& target = summaries_.at({callee->file, callee->fn.begin()});
        const bool bound = !target.owner.empty() && !target.params.empty() &&
                           (target.params[0] == "self" || target.params[0] == "cls");
        std::size_t pos = bound ? 1 : 0;
        for (const Node& a : n.field("arguments").named_children()) {
            if (a.is("list_splat") || a.is("dictionary_splat") || a.is("comment")) break;
            std::string name;
            Node value = a;
            if (a.is("keyword_argument")) {
                name = text(a.field("name"));
                value = a.field("value");
            } else if (pos < target.params.size()) {
                name = target.params[pos++];
            }
            if (name.empty()) continue;
            const Value v = eval_in(fr, value);
            auto& slot = target.env[name];
            const Value joined = join(slot, v);
            if (!(joined == slot)) {
                slot = joined;
                changed.insert(target.file);
            }
        }
    }
}

void Values::seed_params(Summary& s) {
    const Node params = s.fn.field("parameters");
    if (!params) return;
    // An entry point no analysed code calls: a module's `forward`, or a module-level
    // function in scope without callers (one passed to or decorated with torch.compile).
    // Nested functions are called through locals the analysis does not follow: not entries.
    const bool module_level = s.owner.empty() && !analysis::enclosing_function(s.fn);
    const bool called = called_.contains({s.file, s.fn.begin()});
    // A driver (Project::drivers) is the user's code, not traced: its arguments are no data.
    const bool driver = !project_.in_scope(s.file, s.fn.begin());
    const bool forward = (s.fn.field("name").text() == "forward" || module_level) && !called && !driver;
    std::size_t i = 0;
    for (const Node& p : params.named_children()) {
        const std::string name = i < s.params.size() ? s.params[i] : "";
        ++i;
        if (name.empty()) continue;
        Value v;
        if (name == "self" && !s.owner.empty() && i == 1) {
            v = Value::of(kModule);
            v.cls = fmt::format("{}:{}", s.file, s.owner);
        } else if (p.is("list_splat_pattern") || p.is("dictionary_splat_pattern")) {
            v = Value::of(kSeq);
        } else if (is_flag_name(name)) {
            v = Value::of(kBool | kNone | kUnknown);  // output_attentions, use_cache, return_dict, ...
        } else {
            // An annotation is a hint, a caller's argument is evidence: `timestep: int` of a
            // function that analysed code calls takes what the calls pass (a 0-d tensor taken
            // from `scheduler.timesteps`), not a number it may never hold.
            if (const Node type = p.field("type")) {
                const Value hinted = annotation_value(type);
                if (!(called && hinted.only(kNumber))) v = join(v, hinted);
            }
            if (const Node dflt = p.field("value")) {
                const Value lit = literal(dflt);
                v = join(v, lit.kinds ? lit : Value::of(kUnknown));
                if (lit.kinds == kNone && !p.field("type")) v = join(v, Value::of(kUnknown));
            }
            // forward's tensor arguments are data; a submodule's forward that no analysed call
            // reaches gets what its parent passes, which the analysis did not see (Florence-2's
            // WindowAttention.forward(x, size), called through PreNorm's `self.fn`: `size` is a
            // pair of ints).
            if (v.kinds == 0 && forward) {
                v = Value::of(submodules_.contains({s.file, s.owner}) ? kUnknown : kTensor);
            }
        }
        if (v.kinds) s.env[name] = join(s.env[name], v);
    }
}

void Values::analyse(Summary& s) {
    Frame fr{s.file, &s, &s.env, &s.locals};
    std::function<void(const Node&, const Value&)> bind;
    bind = [&](const Node& target, const Value& v) {
        auto assign = [&](const Node& t, const Value& val) {
            if (t.is("identifier")) s.env[text(t)] = join(s.env[text(t)], val);
        };
        if (target.is("identifier")) {
            assign(target, v);
        } else if (target.is("pattern_list") || target.is("tuple_pattern") || target.is("list_pattern")) {
            const auto parts = target.named_children();
            for (std::size_t i = 0; i < parts.size(); ++i) {
                Value item = v.items.size() == parts.size()       ? v.items[i]
                             : v.tensor() && v.only(kTensor)      ? Value::of(kTensor)
                             : v.only(kSize)                      ? Value::of(kNumber)
                             : v.items.empty()                    ? Value::of(kUnknown, v.data)
                                                                  : join_items(v.items);
                if (parts[i].is("list_splat_pattern")) item = Value::of(kSeq, v.data);
                if (parts[i].is("identifier")) {
                    assign(parts[i], item);
                } else if (parts[i].is("tuple_pattern") || parts[i].is("list_pattern") ||
                           parts[i].is("pattern_list")) {
                    bind(parts[i], item);  // for i, (box, mask) in enumerate(zip(...))
                } else {
                    syntax::walk(parts[i], [&](const Node& n) {
                        if (n.is("identifier")) assign(n, Value::of(kUnknown, v.data));
                        return !n.is("attribute") && !n.is("subscript");
                    });
                }
            }
        }
    };
    // A few passes: a name's value may depend on names assigned below it (loops).
    for (int pass = 0; pass < 4; ++pass) {
        const auto before = s.env;
        for (const Node& n : s.bindings) {
            if (n.is("assignment") && n.field("right")) {
                Node right = n.field("right");
                while (right.is("assignment")) right = right.field("right");
                bind(n.field("left"), eval_in(fr, right));
            } else if (n.is("augmented_assignment") && n.field("left").is("identifier")) {
                const Value l = eval_in(fr, n.field("left"));
                const Value r = eval_in(fr, n.field("right"));
                Value v = (l.tensor() || r.tensor()) ? Value::of(kTensor) : Value::of(l.kinds ? l.kinds : static_cast<std::uint16_t>(kUnknown));
                v.data = l.data || r.data;
                bind(n.field("left"), v);
            } else if (n.is("named_expression")) {
                bind(n.field("name"), eval_in(fr, n.field("value")));
            } else if (n.is("for_statement") || n.is("for_in_clause")) {
                bind(n.field("left"), element_value(fr, n.field("right")));
            }
        }
        if (s.env == before) break;
    }
    Value ret;
    for (const Node& n : s.bindings) {
        if (n.is("return_statement")) {
            const auto vals = n.named_children();
            ret = join(ret, vals.empty() ? Value::of(kNone) : eval_in(fr, vals[0]));
        }
        if (n.is("yield")) ret = join(ret, Value::of(kSeq));
    }
    // No return: None. Returns of no value yet (solving_) stay so: None would be joined for good.
    const bool returns = std::any_of(s.bindings.begin(), s.bindings.end(), [](const Node& n) {
        return n.is("return_statement") || n.is("yield");
    });
    if (ret.kinds == 0 && (!solving_ || !returns)) ret = Value::of(kNone);
    s.ret = ret;
}

const Values::Summary* Values::summary_of(std::size_t file, const Node& fn) const {
    const auto it = summaries_.find({file, fn.begin()});
    return it == summaries_.end() ? nullptr : &it->second;
}

}  // namespace graphmend::analysis

// The value analysis: see include/graphmend/values.hpp.
#include "graphmend/values.hpp"

#include "graphmend/knowledge.hpp"
#include "graphmend/liveness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <string_view>

namespace graphmend::analysis {

using syntax::Node;

namespace {

constexpr int kMaxDepth = 24;
constexpr int kReachingHop = 4;  // the depth one reaching assignment costs: at most 6 hops
constexpr std::size_t kMaxItems = 8;

std::string text(const Node& n) { return std::string(n.text()); }

// The value of a call of torch.NAME that returns no tensor; none for the others. torch.Size(...)
// and torch.broadcast_shapes(...) make a torch.Size: shapes, which Dynamo knows at trace time
// (gpytorch's `assert kl.shape == self._batch_shape`).
std::optional<Value> torch_static_value(const std::string& name) {
    if (name == "equal") return Value::of(kBool, true);
    if (name.starts_with("is_") || name.starts_with("has_") || name.starts_with("get_") || name.starts_with("set_") ||
        name.starts_with("_")) {
        return Value::of(kBool | kOther);
    }
    if (name == "Size" || name == "broadcast_shapes") return Value::of(kSize);
    if (knowledge::python_valued_torch(name)) return Value::of(kOther);
    return std::nullopt;
}

// The kinds `isinstance(x, T)` admits for one class T, by its spelling; 0 when unknown.
std::uint16_t kinds_of_class(std::string_view t) {
    static const std::set<std::string_view> kTensors{"torch.Tensor", "Tensor", "torch.nn.Parameter", "nn.Parameter",
                                                     "Parameter", "torch.FloatTensor", "torch.LongTensor",
                                                     "torch.BoolTensor", "torch.HalfTensor", "torch.IntTensor"};
    static const std::set<std::string_view> kNumbers{"int", "float", "bool", "complex", "numbers.Number", "Number",
                                                     "numbers.Real", "numbers.Integral", "numbers.Complex"};
    if (kTensors.contains(t)) return kTensor;
    if (kNumbers.contains(t)) return kNumber | kBool;
    if (t == "str") return kStr;
    if (t == "torch.Size") return kSize;
    if (t == "tuple" || t == "list" || t == "Sequence" || t == "collections.abc.Sequence" || t == "typing.Sequence") {
        return kSeq | kSize;
    }
    if (t == "dict" || t == "set" || t == "Mapping" || t == "collections.abc.Mapping") return kSeq | kOther;
    if (t == "nn.Module" || t == "torch.nn.Module") return kModule;
    // numpy's arrays and scalars (`np.ndarray`, `np.floating`): Python values to Dynamo, never tensors.
    if (t.starts_with("np.") || t.starts_with("numpy.")) return kOther;
    return 0;
}

// `isinstance(NAME, T)` or `isinstance(NAME, (T1, T2))`: NAME and the kinds it admits, when
// every class is known.
std::optional<std::pair<std::string, std::uint16_t>> isinstance_test(const Node& test) {
    const Node e = syntax::without_parens(test);
    if (!e.is("call") || e.field("function").text() != "isinstance") return std::nullopt;
    const auto args = e.field("arguments").named_children();
    if (args.size() != 2 || !args[0].is("identifier")) return std::nullopt;
    std::vector<Node> classes;
    const Node t = syntax::without_parens(args[1]);
    if (t.is("tuple")) {
        classes = t.named_children();
    } else {
        classes.push_back(t);
    }
    std::uint16_t kinds = 0;
    for (const Node& c : classes) {
        const std::uint16_t k = kinds_of_class(c.text());
        if (k == 0) return std::nullopt;
        kinds |= k;
    }
    return std::make_pair(std::string(args[0].text()), kinds);
}

// For the reads of a function narrowed by an enclosing isinstance test, the kinds they may
// have: read's start byte -> kinds kept. The consequence of `if isinstance(x, T)` (or of a
// conjunct of an `and`) keeps T's kinds; the elif/else clauses of `if isinstance(x, T)`,
// the statements after it when it has none and its consequence always leaves (`if
// isinstance(x, T): return ...`), and the consequence of `if not isinstance(x, T)` drop
// them (the negated test the other way). A read after the name is bound again is not
// narrowed.
std::map<std::uint32_t, std::uint16_t> isinstance_narrowing(const Node& fn) {
    std::map<std::uint32_t, std::uint16_t> out;
    constexpr std::uint16_t kAll = 0xFFFF;
    auto mark = [&](const Node& part, const std::string& name, std::uint16_t keep) {
        syntax::walk(part, [&](const Node& n) {
            if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
            if (n.is("identifier") && n.text() == name && analysis::is_read(n)) {
                auto [it, fresh] = out.emplace(n.begin(), kAll);
                it->second &= keep;
            }
            return true;
        });
    };
    // The reads of `name` in a clause (an elif's test, then its block; a block), statement by
    // statement, until one binds it: a plain assignment's own value still reads the old one.
    auto narrow_parts = [&](const std::vector<Node>& parts, const std::string& name, std::uint16_t keep) {
        for (const Node& part : parts) {
            if (!analysis::binds(part, name)) {
                mark(part, name, keep);
                continue;
            }
            if (part.is("expression_statement") && part.named_children().size() == 1 &&
                part.named_children()[0].is("assignment")) {
                Node right = part.named_children()[0];
                while (right.is("assignment")) right = right.field("right");
                if (right && !analysis::binds(right, name)) mark(right, name, keep);
            }
            // An `if` that binds it in a branch: its test still reads the old value.
            if (part.is("if_statement") && !analysis::binds(part.field("condition"), name)) {
                mark(part.field("condition"), name, keep);
            }
            break;
        }
    };
    auto narrow = [&](const Node& region, const std::string& name, std::uint16_t keep) {
        std::vector<Node> parts;
        if (region.is("elif_clause")) parts.push_back(region.field("condition"));
        const Node block = region.is("block")         ? region
                           : region.is("elif_clause") ? region.field("consequence")
                                                      : region.field("body");
        for (const Node& stmt : block.named_children()) parts.push_back(stmt);
        narrow_parts(parts, name, keep);
    };
    // The statements after an `if` (in its block) that run only when its test was false: the
    // `if` has no elif or else and its consequence always leaves (it ends in a return, raise,
    // continue or break).
    auto after_exit = [](const Node& if_statement) {
        std::vector<Node> rest;
        for (const Node& c : if_statement.children()) {
            if (c.is("elif_clause") || c.is("else_clause")) return rest;
        }
        const auto body = if_statement.field("consequence").named_children();
        if (body.empty()) return rest;
        const Node last = body.back();
        if (!last.is("return_statement") && !last.is("raise_statement") && !last.is("continue_statement") &&
            !last.is("break_statement")) {
            return rest;
        }
        bool seen = false;
        for (const Node& stmt : if_statement.parent().named_children()) {
            if (seen) rest.push_back(stmt);
            seen = seen || stmt == if_statement;
        }
        return rest;
    };
    syntax::walk(fn.field("body"), [&](const Node& n) {
        if (n.is("function_definition") || n.is("class_definition") || n.is("lambda")) return false;
        if (!n.is("if_statement")) return true;
        // The clauses in order: (test, consequence) for the `if` and each `elif`, then the else.
        std::vector<std::pair<Node, Node>> clauses{{n.field("condition"), n.field("consequence")}};
        std::vector<Node> later;  // each clause's node after the first, in order (elif and else)
        for (const Node& alt : n.children()) {
            if (alt.is("elif_clause")) clauses.emplace_back(alt.field("condition"), alt.field("consequence"));
            if (alt.is("elif_clause") || alt.is("else_clause")) later.push_back(alt);
        }
        for (std::size_t i = 0; i < clauses.size(); ++i) {
            const Node cond = syntax::without_parens(clauses[i].first);
            // The conjuncts of the test: each positive or negated isinstance narrows.
            std::vector<std::pair<Node, bool>> tests;  // (isinstance call, negated)
            std::vector<Node> todo{cond};
            while (!todo.empty()) {
                const Node c = syntax::without_parens(todo.back());
                todo.pop_back();
                if (c.is("boolean_operator") && c.field("operator").text() == "and") {
                    todo.push_back(c.field("left"));
                    todo.push_back(c.field("right"));
                } else if (c.is("not_operator")) {
                    tests.emplace_back(c.field("argument"), true);
                } else {
                    tests.emplace_back(c, false);
                }
            }
            const bool single = !cond.is("boolean_operator");
            for (const auto& [call, negated] : tests) {
                const auto t = isinstance_test(call);
                if (!t) continue;
                const auto& [name, kinds] = *t;
                narrow(clauses[i].second, name, negated ? static_cast<std::uint16_t>(~kinds) : kinds);
                // The clauses after this one run when its whole test is false: known for a single test.
                if (!single) continue;
                const std::uint16_t other = negated ? kinds : static_cast<std::uint16_t>(~kinds);
                for (std::size_t j = i; j < later.size(); ++j) narrow(later[j], name, other);
                // `if isinstance(x, T): return ...`: below it, x is not a T.
                if (clauses.size() == 1) narrow_parts(after_exit(n), name, other);
            }
        }
        return true;
    });
    return out;
}

Value join_items(const std::vector<Value>& items) {
    Value v;
    for (const auto& i : items) v = join(v, i);
    return v;
}

bool is_identity_or_membership(const Node& comparison) {
    for (const Node& c : comparison.children()) {
        if (c.named()) continue;
        const auto t = c.type();
        if (t != "is" && t != "not" && t != "is not" && t != "in" && t != "not in" && t != "(" && t != ")") {
            return false;
        }
    }
    return true;
}

Value literal(const Node& e) {
    if (e.is("integer") || e.is("float")) return Value::of(kNumber);
    if (e.is("true") || e.is("false")) return Value::of(kBool);
    if (e.is("none")) return Value::of(kNone);
    if (e.is("string") || e.is("concatenated_string")) return Value::of(kStr);
    return {};
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

struct Values::Frame {
    std::size_t file = 0;
    const Summary* summary = nullptr;                   // null outside analysed functions
    const std::map<std::string, Value>* env = nullptr;  // the function's names
    const std::set<std::string>* locals = nullptr;      // names the function binds
    /// Names a select's branch binds (branch_value), read before the function's.
    const std::map<std::string, Value>* overlay = nullptr;
};

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
    // torch.jit.is_scripting() and torch.jit.is_tracing() are False under Dynamo (measured,
    // torch 2.12.1: `if torch.jit.is_tracing(): ...` compiles with fullgraph=True and runs the
    // else branch).
    if (name == "is_scripting" || name == "is_tracing") return false;
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

}  // namespace

Values::Values(const Project& project) : project_(project) {
    const auto& files = project.files();
    for (std::size_t f = 0; f < files.size(); ++f) {
        // Attributes of every class: `self.NAME = ...` and register_buffer in __init__.
        for (const auto& [cls, info] : files[f].index.classes) {
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
                attrs[attr] = join(attrs[attr], v);
                return true;
            });
        }
        for (const Node& fn : project.scope_of(f)) {
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
            summaries_.emplace(std::make_pair(f, fn.begin()), std::move(s));
        }
    }
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
    // Interprocedural fixed point: returns flow to callers, arguments to parameters. Each
    // project settles on its own: after the first round only the projects that changed are
    // analysed again (all of them when a package changed, since any project may call into a
    // package; a folder project's functions are called only from its own files). Joins are
    // monotone, so a project that did not change gives the same values again: skipping it
    // changes no result, and a batch of checkouts costs what its checkouts cost one by one.
    const auto& all_files = project.files();
    bool all_active = true;
    std::set<std::string> active;
    for (int round = 0; round < 8; ++round) {
        std::set<std::string> changed_projects;
        bool package_changed = false;
        auto is_active = [&](const Summary& s) { return all_active || active.contains(all_files[s.file].project); };
        auto mark = [&](std::size_t f) {
            changed_projects.insert(all_files[f].project);
            package_changed = package_changed || !all_files[f].isolated;
        };
        for (auto& [key, s] : summaries_) {
            if (!is_active(s)) continue;
            const auto before_env = s.env;
            const Value before_ret = s.ret;
            analyse(s);
            if (s.env != before_env || !(s.ret == before_ret)) mark(s.file);
        }
        // Arguments at every in-scope call site join into the callee's parameters.
        for (auto& [key, s] : summaries_) {
            if (!is_active(s)) continue;
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
                        mark(target.file);
                    }
                }
            }
        }
        if (changed_projects.empty()) break;
        all_active = package_changed;
        active = std::move(changed_projects);
    }
    if (const char* dbg = std::getenv("GRAPHMEND_DEBUG_VALUES")) {  // developer aid: dump one function's names
        for (const auto& [key, s] : summaries_) {
            if (s.fn.field("name").text() != dbg) continue;
            fmt::print(stderr, "{}:{} {}.{}\n", project.files()[s.file].path, s.fn.position().line, s.owner, dbg);
            for (const auto& [name, v] : s.env) fmt::print(stderr, "  {} = {}{}\n", name, describe(v), v.data ? " (data)" : "");
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
    const bool forward = (s.fn.field("name").text() == "forward" || module_level) &&
                         !called_.contains({s.file, s.fn.begin()});
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
            if (const Node type = p.field("type")) v = join(v, annotation_value(type));
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
    auto bind = [&](const Node& target, const Value& v) {
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
                const Value it = eval_in(fr, n.field("right"));
                Value elem = it.only(kTensor)  ? Value::of(kTensor)
                             : !it.items.empty() ? join_items(it.items)
                             : it.only(kSize)    ? Value::of(kNumber)
                                                 : Value::of(kUnknown);
                elem.data = elem.data || it.data;
                bind(n.field("left"), elem);
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
    if (ret.kinds == 0) ret = Value::of(kNone);
    s.ret = ret;
}

const Values::Summary* Values::summary_of(std::size_t file, const Node& fn) const {
    const auto it = summaries_.find({file, fn.begin()});
    return it == summaries_.end() ? nullptr : &it->second;
}

std::string Values::dotted_torch(std::size_t file, const Node& e) const {
    const std::string ext = project_.external_name(file, e);
    if (ext.starts_with("torch.") || ext == "torch") return ext;
    return "";
}

Value Values::self_attribute(std::size_t file, const std::string& owner, const std::string& attr) const {
    // Along the class and its project bases.
    std::vector<std::pair<std::size_t, std::string>> todo{{file, owner}};
    std::set<std::pair<std::size_t, std::string>> seen;
    for (std::size_t i = 0; i < todo.size() && i < 32; ++i) {
        if (!seen.insert(todo[i]).second) continue;
        if (const auto it = attributes_.find(todo[i]); it != attributes_.end()) {
            if (const auto a = it->second.find(attr); a != it->second.end()) return a->second;
        }
        const auto& classes = project_.files()[todo[i].first].index.classes;
        const auto c = classes.find(todo[i].second);
        if (c == classes.end()) continue;
        for (const Node& b : c->second.bases) {
            if (auto base = project_.class_named(todo[i].first, b)) todo.push_back(*base);
        }
    }
    return Value::of(kUnknown);
}

const Values::Summary* Values::callee_of(const Frame& f, const Node& call, Value* module_value) const {
    const Node fn = call.field("function");
    const std::string owner = f.summary ? f.summary->owner : "";
    // A call of a module value: its class's forward.
    if (!fn.is("identifier") || !f.locals->contains(text(fn))) {
        if (fn.is("attribute") && fn.field("object").text() == "self" && !owner.empty()) {
            const Value attr = self_attribute(f.file, owner, text(fn.field("attribute")));
            if (attr.kinds == kModule) {
                if (module_value) *module_value = attr;
                const auto colon = attr.cls.find(':');
                if (colon != std::string::npos && !attr.cls.starts_with("torch.")) {
                    const std::size_t file = std::stoul(attr.cls.substr(0, colon));
                    if (auto m = project_.find_method(file, attr.cls.substr(colon + 1), "forward")) {
                        return summary_of(m->file, m->node);
                    }
                }
                return nullptr;
            }
        }
        // A method of a module attribute (`self.updater.redraw(...)`): its class's method.
        if (fn.is("attribute") && fn.field("object").is("attribute") &&
            fn.field("object").field("object").text() == "self" && !owner.empty()) {
            const Value attr = self_attribute(f.file, owner, text(fn.field("object").field("attribute")));
            const auto colon = attr.cls.find(':');
            if (attr.kinds == kModule && colon != std::string::npos && !attr.cls.starts_with("torch.")) {
                const std::size_t file = std::stoul(attr.cls.substr(0, colon));
                if (auto m = project_.find_method(file, attr.cls.substr(colon + 1), text(fn.field("attribute")))) {
                    return summary_of(m->file, m->node);
                }
            }
            return nullptr;
        }
        if (auto ref = project_.callee(f.file, call, owner)) return summary_of(ref->file, ref->node);
    }
    return nullptr;
}

Value Values::branch_value(const Frame& f, const Node& lambda, int depth) const {
    // A branch is `lambda: VALUE`, or `lambda: (NAME := V, ..., VALUE)[-1]` when it binds names
    // first (the branch's statements): those names take their values in order, over the
    // function's, while VALUE is read.
    const Node body = lambda.field("body");
    if (!body || depth > kMaxDepth) return Value::of(kUnknown);
    const Node seq = body.is("subscript") ? syntax::without_parens(body.field("value")) : Node();
    const Node idx = body.is("subscript") ? body.field("subscript") : Node();
    if (!seq.is("tuple") || idx.text() != "-1") return eval_in(f, body, depth);
    std::map<std::string, Value> bound = f.overlay != nullptr ? *f.overlay : std::map<std::string, Value>();
    Frame inner = f;
    inner.overlay = &bound;
    const auto parts = seq.named_children();
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        if (!parts[i].is("named_expression")) continue;
        const Value v = eval_in(inner, parts[i].field("value"), depth + 1);
        bound[text(parts[i].field("name"))] = v;
    }
    return parts.empty() ? Value::of(kUnknown) : eval_in(inner, parts.back(), depth + 1);
}

Value Values::call_value(const Frame& f, const Node& call, int depth) const {
    const Node fn = call.field("function");
    const auto args = call.field("arguments").named_children();
    auto arg = [&](std::size_t i) { return i < args.size() ? eval_in(f, args[i], depth + 1) : Value(); };
    // GM201's select, in a file fixed before and read again (the fixed-point loop's next pass,
    // a second run): `_graphmend_if(TEST, lambda: A, lambda: B, ...)` has the value of the `if`
    // it replaced, the join of its branches' values. Taken as an unknown call, a tensor it
    // selects was no tensor there, and a site the first run refused for it was fixed by the
    // second (found by the fuzz run: a second fix changed the fixed text).
    if (fn.is("identifier") && text(fn) == "_graphmend_if" && args.size() >= 3 && args[1].is("lambda") &&
        args[2].is("lambda")) {
        return join(branch_value(f, args[1], depth + 1), branch_value(f, args[2], depth + 1));
    }
    if (fn.is("identifier") && !f.locals->contains(text(fn)) &&
        project_.files()[f.file].index.find_import(text(fn)) == nullptr &&
        !project_.files()[f.file].index.functions.contains(text(fn)) &&
        !project_.files()[f.file].index.classes.contains(text(fn))) {
        // Builtins.
        const std::string name = text(fn);
        const Value a = arg(0);
        const bool reads = a.tensor() || a.data;
        if (name == "float" || name == "int") return Value::of(kNumber, reads);
        if (name == "bool") return Value::of(kBool, reads);
        if (name == "len") return Value::of(kNumber);
        if (name == "isinstance" || name == "hasattr" || name == "callable" || name == "issubclass") {
            return Value::of(kBool);
        }
        if (name == "any" || name == "all") return Value::of(kBool, reads || (a.kinds & kUnknown && a.data));
        if (name == "abs" || name == "round" || name == "sum" || ((name == "max" || name == "min") && args.size() == 1)) {
            if (a.only(kTensor) && args.size() == 1 && name != "abs" && name != "round") {
                return Value::of(kTensor);  // over a tensor's elements: a tensor (sum) or one element
            }
            if (a.tensor()) return Value::of(kTensor);
            return Value::of(kNumber | (a.kinds & kUnknown), a.data);
        }
        if (name == "max" || name == "min") {
            // Of a tensor and numbers, Dynamo computes a tensor (torch.clamp / torch.maximum;
            // measured at torch 2.12.1: `max(t.max() + 1, n)` traces without a break).
            Value v;
            bool tensor = false;
            for (std::size_t i = 0; i < args.size(); ++i) {
                const Value a = arg(i);
                tensor = tensor || a.only(kTensor);
                v = join(v, a);
            }
            if (tensor) return Value::of(kTensor, v.data);
            return v;
        }
        if (name == "range" || name == "enumerate" || name == "zip" || name == "list" || name == "tuple" ||
            name == "sorted" || name == "reversed" || name == "map" || name == "filter" || name == "dict" ||
            name == "set") {
            return Value::of(kSeq, a.data);
        }
        if (name == "str" || name == "repr" || name == "format") return Value::of(kStr);
        if (name == "getattr") return Value::of(kUnknown);
        if (name == "type" || name == "id" || name == "super") return Value::of(kOther);
        return Value::of(kUnknown);
    }
    if (fn.is("attribute")) {
        const std::string method = text(fn.field("attribute"));
        const Node obj = fn.field("object");
        // torch.* functions.
        const std::string torch = dotted_torch(f.file, fn);
        if (!torch.empty()) {
            const auto dot = torch.rfind('.');
            const std::string ns = torch.substr(0, dot);
            const std::string name = torch.substr(dot + 1);
            if (const auto v = torch_static_value(name)) return *v;
            if (knowledge::tensor_namespace(ns)) {
                if (knowledge::tensor_sequence(name, knowledge::kTorch | knowledge::kTensor)) return Value::of(kSeq);
                if (name == "where" && args.size() == 1) return Value::of(kSeq);
                if (name == "nonzero" || name == "unique" || name == "argwhere") {
                    // A tensor, or a tuple of them with as_tuple=True / return_inverse=True ...
                    for (const Node& a : args) {
                        if (a.is("keyword_argument") && a.field("value").text() != "False") return Value::of(kSeq);
                    }
                    return Value::of(kTensor);
                }
                return Value::of(kTensor);
            }
            if (ns.starts_with("torch.nn") && !ns.starts_with("torch.nn.functional")) {
                // A torch.nn class made in forward: a module, called later.
                Value v = Value::of(kModule);
                v.cls = torch;
                return v;
            }
            return Value::of(kUnknown);
        }
        const Value recv = eval_in(f, obj, depth + 1);
        if (recv.tensor()) {
            if (method == "item") return Value::of(kNumber | kBool, true);
            if (method == "tolist") return Value::of(kSeq | kNumber, true);
            if (method == "size") return args.empty() ? Value::of(kSize) : Value::of(kNumber);
            if (method == "equal") return Value::of(kBool, true);
            if (knowledge::number_method(method)) return Value::of(kNumber);
            if (method.starts_with("is_")) return Value::of(kBool);
            if (method == "type" && args.empty()) return Value::of(kStr);
            if (knowledge::tensor_sequence(method, knowledge::kTensor)) return Value::of(kSeq);
            if ((method == "nonzero" || method == "unique") && !args.empty()) return Value::of(kSeq | kTensor);
            if (recv.only(kTensor | kNone | kUnknown)) return Value::of(kTensor);
        }
        // `.item()` / `.tolist()` of a value not known to be a tensor (numpy, a list): no data read.
        if (method == "item") return Value::of(kNumber | kUnknown);
        if (method == "tolist") return Value::of(kSeq | kUnknown);
        if (knowledge::value_reduction(method) && !recv.only(kSeq | kNumber | kStr | kBool | kNone | kOther | kSize)) {
            const std::string_view root = obj.text();
            if (root != "np" && root != "numpy" && root != "math") return Value::of(kTensor);
        }
    }
    Value module;
    if (const Summary* callee = callee_of(f, call, &module)) return callee->ret;
    if (module.kinds == kModule && module.cls.starts_with("torch.nn.")) {
        const std::string name = module.cls.substr(module.cls.rfind('.') + 1);
        return knowledge::tensor_module(name) ? Value::of(kTensor) : Value::of(kUnknown);
    }
    // `x = self.layer(h)` where layer is a project module without a known forward, or a local module.
    if (fn.is("identifier") && f.env) {
        if (const auto it = f.env->find(text(fn)); it != f.env->end() && it->second.only(kModule)) {
            const std::string& cls = it->second.cls;
            if (cls.starts_with("torch.nn.") && knowledge::tensor_module(cls.substr(cls.rfind('.') + 1))) {
                return Value::of(kTensor);
            }
        }
    }
    return Value::of(kUnknown);
}

Value Values::eval_in(const Frame& f, const Node& e, int depth) const {
    if (!e || depth > kMaxDepth) return Value::of(kUnknown);
    if (const Value lit = literal(e); lit.kinds) return lit;
    const auto type = e.type();
    if (type == "parenthesized_expression") {
        const auto parts = e.named_children();
        return parts.empty() ? Value::of(kUnknown) : eval_in(f, parts.back(), depth + 1);
    }
    if (type == "identifier") {
        Value v = eval_name(f, e, depth);
        if (f.summary) {
            // Inside `if isinstance(NAME, T):` (or its else), NAME has T's kinds (or not).
            if (const auto it = f.summary->narrowed.find(e.begin()); it != f.summary->narrowed.end()) {
                const std::uint16_t keep = it->second & static_cast<std::uint16_t>(~kUnknown);
                std::uint16_t kinds = v.kinds & keep;
                if ((v.kinds & kUnknown) != 0 || kinds == 0) kinds |= keep & (kTensor | kNumber | kBool | kNone | kStr | kSize | kModule | kSeq | kOther);
                if (kinds != 0 && kinds != v.kinds) {
                    v.kinds = kinds;
                    if (!(kinds & kSeq)) v.items.clear();
                }
            }
        }
        return v;
    }
    return eval_rest(f, e, depth);
}

Value Values::eval_name(const Frame& f, const Node& e, int depth) const {
    {
        const std::string name = text(e);
        if (f.overlay) {
            if (const auto it = f.overlay->find(name); it != f.overlay->end()) return it->second;
        }
        // The one assignment that reaches this read. Each hop spends several levels, so a chain
        // of reassignments (`x = x + x` ...) stops early and takes the name's join instead.
        if (f.summary && depth + kReachingHop <= kMaxDepth) {
            if (const auto it = f.summary->reaching.find(e.begin()); it != f.summary->reaching.end()) {
                // A value of unknown kind says nothing: the join of the name's other assignments
                // is kept then (a name reassigned from a tensor is taken to stay one).
                const Value v = eval_in(f, it->second, depth + kReachingHop);
                if (v.kinds && !v.only(kUnknown)) return v;
            }
        }
        if (f.env) {
            if (const auto it = f.env->find(name); it != f.env->end() && it->second.kinds) return it->second;
        }
        if (f.locals->contains(name)) return Value::of(kUnknown);
        if (!dotted_torch(f.file, e).empty() || project_.files()[f.file].index.find_import(name)) {
            return Value::of(kOther);
        }
        return Value::of(kUnknown);
    }
}

Value Values::eval_rest(const Frame& f, const Node& e, int depth) const {
    const auto type = e.type();
    if (type == "attribute") {
        const Node obj = e.field("object");
        const std::string attr = text(e.field("attribute"));
        if (obj.is("identifier") && obj.text() == "self" && f.summary && !f.summary->owner.empty() &&
            (!f.env || !f.env->contains("self") || f.env->at("self").kinds == kModule)) {
            return self_attribute(f.file, f.summary->owner, attr);
        }
        if (!dotted_torch(f.file, e).empty()) return Value::of(kOther);
        const Value recv = eval_in(f, obj, depth + 1);
        if (recv.only(kTensor) || recv.only(kTensor | kNone)) {
            if (attr == "shape") return Value::of(kSize);
            if (attr == "ndim") return Value::of(kNumber);
            if (attr == "dtype" || attr == "device" || attr == "layout") return Value::of(kOther);
            if (attr == "T" || attr == "mT" || attr == "H" || attr == "mH" || attr == "real" || attr == "imag" ||
                attr == "data") {
                return Value::of(kTensor);
            }
            if (attr == "grad") return Value::of(kTensor | kNone);
            if (attr.starts_with("is_") || attr == "requires_grad") return Value::of(kBool);
        }
        return Value::of(kUnknown);
    }
    if (type == "call") return call_value(f, e, depth);
    if (type == "binary_operator") {
        const Value l = eval_in(f, e.field("left"), depth + 1);
        const Value r = eval_in(f, e.field("right"), depth + 1);
        Value v;
        if (l.tensor() || r.tensor()) {
            v = Value::of(kTensor);
        } else if ((l.only(kNumber | kBool) && r.only(kNumber | kBool))) {
            v = Value::of(kNumber);
        } else if (l.only(kStr) || r.only(kStr)) {
            v = Value::of(kStr);
        } else if (l.only(kSize) || l.only(kSeq)) {
            v = Value::of(l.kinds);
        } else {
            v = Value::of(kUnknown | ((l.kinds | r.kinds) & kNumber));
        }
        v.data = l.data || r.data;
        return v;
    }
    if (type == "unary_operator") return eval_in(f, e.field("argument"), depth + 1);
    if (type == "not_operator") {
        const Value a = eval_in(f, e.field("argument"), depth + 1);
        return Value::of(kBool, a.data || a.tensor());
    }
    if (type == "boolean_operator") {
        return join(eval_in(f, e.field("left"), depth + 1), eval_in(f, e.field("right"), depth + 1));
    }
    if (type == "comparison_operator") {
        if (is_identity_or_membership(e)) return Value::of(kBool);
        Value v = Value::of(kBool);
        for (const Node& c : e.named_children()) {
            const Value x = eval_in(f, c, depth + 1);
            if (x.tensor()) v = Value::of(kTensor);
            v.data = v.data || x.data;
        }
        return v;
    }
    if (type == "conditional_expression") {
        const auto parts = e.named_children();
        if (parts.size() == 3) return join(eval_in(f, parts[0], depth + 1), eval_in(f, parts[2], depth + 1));
        return Value::of(kUnknown);
    }
    if (type == "tuple" || type == "expression_list" || type == "list") {
        Value v = Value::of(kSeq);
        const auto parts = e.named_children();
        if (parts.size() <= kMaxItems) {
            for (const Node& p : parts) {
                if (p.is("list_splat")) {
                    v.items.clear();
                    break;
                }
                v.items.push_back(eval_in(f, p, depth + 1));
                v.data = v.data || v.items.back().data;
            }
        }
        return v;
    }
    if (type == "subscript") {
        const Value base = eval_in(f, e.field("value"), depth + 1);
        if (base.only(kTensor) || base.only(kTensor | kNone)) return Value::of(kTensor);
        if (base.only(kSize)) {
            const Node idx = e.field("subscript");
            return Value::of(idx && idx.is("slice") ? kSize : kNumber);
        }
        const Node idx = e.field("subscript");
        const bool negative = idx && idx.is("unary_operator") && idx.field("operator").text() == "-" &&
                              idx.field("argument").is("integer");
        if (!base.items.empty() && idx && (idx.is("integer") || negative)) {
            const std::string digits = text(negative ? idx.field("argument") : idx);
            if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) {
                return join_items(base.items);  // 0x1, 1_0, a huge index: not read here
            }
            const long i = negative ? -std::stol(digits) : std::stol(digits);
            const long n = static_cast<long>(base.items.size());
            if (i >= -n && i < n) return base.items[static_cast<std::size_t>(i < 0 ? i + n : i)];
        }
        if (!base.items.empty()) return join_items(base.items);
        return Value::of(kUnknown, base.data);
    }
    if (type == "lambda") return Value::of(kOther);
    if (type == "list_comprehension" || type == "generator_expression" || type == "dictionary" ||
        type == "set" || type == "dictionary_comprehension" || type == "set_comprehension") {
        bool data = false;
        syntax::walk(e, [&](const Node& n) {
            if (n.is("call") && (n.field("function").text().ends_with(".item") ||
                                 n.field("function").text().ends_with(".tolist"))) {
                data = true;
            }
            return !data;
        });
        return Value::of(kSeq, data);
    }
    if (type == "await" || type == "yield") return Value::of(kUnknown);
    return Value::of(kUnknown);
}

Value Values::eval(std::size_t file, const Node& expr) const {
    if (!expr) return Value::of(kUnknown);
    Node fn = analysis::enclosing_function(expr);
    while (fn && !fn.is("function_definition")) fn = analysis::enclosing_function(fn);
    const Summary* s = fn ? summary_of(file, fn) : nullptr;
    std::set<std::string> own;  // a function the analysis did not summarise
    if (!s && fn) own = analysis::local_names(fn);
    Frame fr{file, s, s ? &s->env : nullptr, s ? &s->locals : &own};
    return eval_in(fr, expr);
}

bool Values::narrowed_to_python(std::size_t file, const Node& id) const {
    if (!id.is("identifier")) return false;
    Node fn = analysis::enclosing_function(id);
    while (fn && !fn.is("function_definition")) fn = analysis::enclosing_function(fn);
    const Summary* s = fn ? summary_of(file, fn) : nullptr;
    if (s == nullptr) return false;
    const auto it = s->narrowed.find(id.begin());
    return it != s->narrowed.end() && (it->second & kTensor) == 0;
}

std::optional<FunctionRef> Values::callee(std::size_t file, const Node& call, const Node& enclosing) const {
    if (!call.is("call")) return std::nullopt;
    Node fn = enclosing;
    if (!fn) {
        fn = analysis::enclosing_function(call);
        while (fn && !fn.is("function_definition")) fn = analysis::enclosing_function(fn);
    }
    const Summary* s = fn ? summary_of(file, fn) : nullptr;
    Summary own;  // a function the analysis did not summarise: its names and its class
    if (!s) {
        own.file = file;
        own.fn = fn;
        if (fn) own.locals = analysis::local_names(fn);
        for (Node p = fn ? fn.parent() : Node(); p; p = p.parent()) {
            if (p.is("function_definition")) break;
            if (p.is("class_definition")) {
                own.owner = std::string(p.field("name").text());
                break;
            }
        }
        s = &own;
    }
    Frame fr{file, s, &s->env, &s->locals};
    const Summary* target = callee_of(fr, call, nullptr);
    if (!target) return std::nullopt;
    return FunctionRef{target->file, target->fn};
}

bool Values::data_test(std::size_t file, const Node& test) const {
    if (!test) return false;
    if (test.is("boolean_operator")) return data_test(file, test.field("left")) || data_test(file, test.field("right"));
    if (test.is("not_operator")) return data_test(file, test.field("argument"));
    if (test.is("parenthesized_expression")) {
        const auto parts = test.named_children();
        return !parts.empty() && data_test(file, parts.back());
    }
    if (test.is("comparison_operator") && is_identity_or_membership(test)) return false;
    const Value v = eval(file, test);
    return v.tensor() || v.data;
}

std::vector<std::string> Values::data_scalars(std::size_t file, const Node& node) const {
    Node fn = analysis::enclosing_function(node);
    while (fn && !fn.is("function_definition")) fn = analysis::enclosing_function(fn);
    std::vector<std::string> out;
    const Summary* s = fn ? summary_of(file, fn) : nullptr;
    if (!s) return out;
    syntax::walk(node, [&](const Node& n) {
        if (n.is("lambda")) return false;
        if (n.is("identifier")) {
            const std::string name = text(n);
            const Node p = n.parent();
            if (p.is("attribute") && p.field("attribute") == n) return true;
            if (p.is("keyword_argument") && p.field("name") == n) return true;
            if (const auto it = s->env.find(name); it != s->env.end() && it->second.data && !it->second.tensor() &&
                                                   std::find(out.begin(), out.end(), name) == out.end()) {
                out.push_back(name);
            }
        }
        return true;
    });
    return out;
}

}  // namespace graphmend::analysis

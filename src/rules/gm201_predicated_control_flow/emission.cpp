// GM201: the text of the rewrite (see predicated_control_flow.hpp).
#include <algorithm>

#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"
#include "predicated_control_flow.hpp"

namespace graphmend::rules::control_flow {

namespace {

// What a branch reads that may carry gradients: locals and parameters read before the
// branch assigns them, and `self.NAME` (parameters, buffers, submodules).
struct Reads {
    std::map<std::string, Node> roots;  // name or "self.NAME" -> a node that reads it
    std::set<std::string> assigned;
};

// The function `name` defined in the function around `n` (a closure), or an invalid node.
Node closure_of(const Node& n, const std::string& name) {
    Node def = analysis::enclosing_function(n);
    while (def && !def.is("function_definition")) def = analysis::enclosing_function(def);
    Node found;
    if (def) {
        syntax::walk(def.field("body"), [&](const Node& d) {
            if (d.is("function_definition") && text(d.field("name")) == name) found = d;
            return !found && !d.is("function_definition") && !d.is("class_definition");
        });
    }
    return found;
}

void collect_reads(const Node& expr, const std::set<std::string>& locals, Reads& r) {
    syntax::walk(expr, [&](const Node& n) {
        if (n.is("attribute") && n.field("object").is("identifier") && n.field("object").text() == "self") {
            r.roots.emplace(std::string(n.text()), n);
            return false;
        }
        if (n.is("identifier") && is_read(n)) {
            const std::string name(n.text());
            // A closure called here reads the enclosing function's names when it runs: those
            // are what may carry gradients, not the function.
            const Node closure = n.parent().is("call") && n.parent().field("function") == n ? closure_of(n, name) : Node();
            if (closure) {
                const std::set<std::string> own = analysis::local_names(closure);
                syntax::walk(closure.field("body"), [&](const Node& m) {
                    if (m.is("identifier") && is_read(m) && !own.contains(text(m)) && locals.contains(text(m)) &&
                        !r.assigned.contains(text(m)) && text(m) != "self") {
                        r.roots.emplace(text(m), m);
                    }
                    return true;
                });
            } else if (locals.contains(name) && !r.assigned.contains(name) && name != "self") {
                r.roots.emplace(name, n);
            }
        }
        return true;
    });
}

}  // namespace

std::string branch_value(const Branch& b, const std::vector<std::string>& live) {
    std::map<std::string, std::string> renamed;  // name -> current lambda-local name
    bool reads_renamed = false;                   // a statement reads a name an earlier one assigned
    std::map<std::string, std::string> values_at_step;  // name -> its assigned value, as bound
    std::vector<std::string> steps;
    const std::set<std::uint32_t>* clones = nullptr;  // the statement's Statement::clones
    auto substitute = [&](const Node& expr) {
        return rebuild(expr, [&](const Node& n) -> std::optional<std::string> {
            if (n.is("identifier") && is_read(n)) {
                std::string name = text(n);
                if (const auto it = renamed.find(name); it != renamed.end()) {
                    reads_renamed = true;
                    name = it->second;
                }
                if (clones != nullptr && clones->contains(n.begin())) return name + ".clone()";
                if (name != n.text()) return name;
            }
            return std::nullopt;
        });
    };
    std::string result;
    for (const auto& st : b.body) {
        clones = &st.clones;
        if (st.kind == Statement::Check) {
            steps.push_back(st.check.text(fmt::format("{}({}, lambda: {})", runtime::name::and_, b.gate, st.effect)));
            continue;
        }
        if (st.copy) {
            const std::string dst = text(st.value.field("function").field("object"));
            const auto it = renamed.find(dst);
            const std::string local = "_graphmend_" + st.name;
            std::string value = fmt::format("{}({}, {})", runtime::name::copy, it == renamed.end() ? dst : it->second,
                                            substitute(st.value.field("arguments").named_children()[0]));
            reads_renamed = true;  // the bindings form: a copy is never a plain value
            steps.push_back(fmt::format("{} := {}", local, value));
            values_at_step[st.name] = std::move(value);
            renamed[st.name] = local;
            continue;
        }
        if (st.kind == Statement::Return) {
            result = !st.value ? "None"
                     : st.value.is("expression_list") ? fmt::format("({})", substitute(st.value))
                                                      : substitute(st.value);
            continue;
        }
        // A temporary of graphmend's own (a hoisted call's argument) keeps its name.
        const std::string local = st.name.starts_with("_graphmend_") ? st.name : "_graphmend_" + st.name;
        std::string value = !st.raw.empty() ? st.raw : substitute(st.value);
        if (st.raw.empty() && st.value.is("expression_list")) value = "(" + value + ")";
        steps.push_back(fmt::format("{} := {}", local, value));
        values_at_step[st.name] = std::move(value);
        renamed[st.name] = local;
    }
    if (!b.returns) {
        std::vector<std::string> values;
        for (const auto& name : live) {
            const auto it = renamed.find(name);
            values.push_back(it == renamed.end() ? name : it->second);
        }
        result = values.size() == 1 ? values[0] : fmt::format("({})", fmt::join(values, ", "));
    }
    if (steps.empty()) return result;
    // Independent assignments, one per live name, need no bindings: return their values.
    if (!b.returns && !reads_renamed) {
        auto& direct = values_at_step;
        const bool one_each = direct.size() == b.body.size() &&
                              std::all_of(direct.begin(), direct.end(), [&](const auto& kv) {
                                  return std::find(live.begin(), live.end(), kv.first) != live.end();
                              });
        if (one_each) {
            std::vector<std::string> values;
            for (const auto& name : live) values.push_back(direct.contains(name) ? direct[name] : name);
            return values.size() == 1 ? values[0] : fmt::format("({})", fmt::join(values, ", "));
        }
    }
    return fmt::format("({}, {})[-1]", fmt::join(steps, ", "), result);
}

std::vector<std::string> one_sided_reads(const Context& ctx, const Scope& scope, const std::vector<Branch>& branches,
                                         const std::vector<std::vector<Node>>& reads,
                                         const std::vector<std::string>& implicit) {
    std::vector<Reads> per;
    for (std::size_t i = 0; i < branches.size(); ++i) {
        Reads r;
        std::size_t k = 0;
        for (const auto& st : branches[i].body) {
            if (st.value && k < reads[i].size() && reads[i][k] == st.value) {
                collect_reads(st.value, scope.locals, r);
                ++k;
            }
            if (st.kind == Statement::Assign) r.assigned.insert(st.name);
        }
        per.push_back(std::move(r));
    }
    if (!implicit.empty() || per.size() == 1) {
        Reads r;
        for (const auto& name : implicit) r.roots.emplace(name, Node());
        per.push_back(std::move(r));
    }
    std::map<std::string, Node> one_sided;
    for (const auto& r : per) {
        for (const auto& [name, node] : r.roots) {
            const bool everywhere = std::all_of(per.begin(), per.end(), [&](const Reads& o) { return o.roots.contains(name); });
            if (everywhere) continue;
            if (node) {
                const analysis::Value v = ctx.values.eval(ctx.file, node);
                if (v.kinds != 0 && !(v.kinds & (analysis::kTensor | analysis::kModule | analysis::kUnknown |
                                                 analysis::kSeq))) {
                    continue;  // a number, bool, None, string: no gradient
                }
            }
            if (!one_sided.contains(name) || !one_sided[name]) one_sided[name] = node;
        }
    }
    std::vector<std::string> names;
    for (const auto& [name, node] : one_sided) names.push_back(name);
    return names;
}

std::string only_argument(const std::vector<std::string>& names) {
    if (names.empty()) return "";
    return fmt::format(", only=lambda: ({},)", fmt::join(names, ", "));
}

// The runtime's if_() (src/runtime/predicated_control_flow.py) keeps the `if` where these fail.
std::string select_condition(bool grad_unsafe, const std::vector<std::string>& one_sided, const std::string& layouts) {
    std::vector<std::string> parts;
    if (!layouts.empty()) parts.push_back(layouts);
    if (grad_unsafe) parts.push_back("no branch value requiring grad");
    if (!one_sided.empty()) {
        std::vector<std::string> quoted;
        for (const auto& name : one_sided) quoted.push_back(fmt::format("`{}`", name));
        parts.push_back(fmt::format("no autograd or {} not requiring grad", fmt::join(quoted, ", ")));
    }
    return fmt::format("{}", fmt::join(parts, ", "));
}

std::string layout(const Node& stmt, std::uint32_t end, const std::vector<std::string>& pieces,
                   const std::string& after) {
    const auto& src = stmt.source();
    const std::string eol(src.eol());
    const std::string indent = indent_of(stmt);
    const std::string tail = after.empty() ? "" : eol + indent + after;
    const std::string inner = indent + (indent.find('\t') != std::string::npos ? "\t" : "    ");
    std::vector<std::string> comments;
    for (Node n = stmt; n && n.begin() < end; n = n.next_sibling()) {
        syntax::walk(n, [&](const Node& c) {
            if (c.is("comment")) comments.emplace_back(c.text());
            return true;
        });
    }
    std::size_t budget = syntax::count_newlines(src.slice(stmt.begin(), end));
    budget -= std::min(budget, syntax::count_newlines(tail));
    for (const auto& p : pieces) budget -= std::min(budget, syntax::count_newlines(p));
    // Each comment takes a line, and then ')' needs one of its own.
    const std::size_t reserved = comments.empty() ? 0 : comments.size() + 1;
    std::size_t breaks = budget > reserved ? budget - reserved : 0;
    std::string out = pieces[0];
    for (std::size_t i = 1; i < pieces.size(); ++i) {
        out += breaks > 0 ? eol + inner : " ";
        breaks -= std::min<std::size_t>(breaks, 1);
        out += pieces[i];
    }
    for (const auto& c : comments) out += eol + inner + c;
    std::size_t used = syntax::count_newlines(out) - syntax::count_newlines(pieces[0]);
    for (std::size_t i = 1; i < pieces.size(); ++i) used -= std::min(used, syntax::count_newlines(pieces[i]));
    if (!comments.empty() || used < budget) {
        for (; used + 1 < budget; ++used) out += eol;
        return out + eol + indent + ")" + tail;
    }
    if (out.ends_with(",")) out.pop_back();
    return out + ")" + tail;
}

}  // namespace graphmend::rules::control_flow

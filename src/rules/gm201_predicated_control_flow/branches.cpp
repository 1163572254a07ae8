// GM201: a branch's statements as the Statements its lambda evaluates, and what the
// class around the function holds (see predicated_control_flow.hpp).
#include "predicated_control_flow.hpp"

#include "graphmend/knowledge.hpp"
#include "rules/support/check_call.hpp"
#include "rules/support/deferred_call.hpp"
#include "rules/support/site.hpp"
#include "rules/support/tensor_test.hpp"

namespace graphmend::rules::control_flow {

namespace {

}  // namespace

std::string plain_name(const Node& n) {
    if (!n.is("string")) return "";
    const std::string t = text(n);
    if (t.size() < 3 || (t.front() != '"' && t.front() != '\'') || t.back() != t.front()) return "";
    const std::string inner = t.substr(1, t.size() - 2);
    if (inner.empty() || std::isdigit(static_cast<unsigned char>(inner[0]))) return "";
    for (char c : inner) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return "";
    }
    return inner;
}

bool is_literal(const Node& n) {
    return n.is("true") || n.is("false") || n.is("none") || n.is("integer") || n.is("float") || n.is("string");
}

std::optional<Statement> Checker::cache_statement(const Node& stmt, std::string& why) {
    const Node test = stmt.field("condition");
    if (!test.is("not_operator")) return std::nullopt;
    const Node call = test.field("argument");
    if (!call.is("call") || call.field("function").text() != "hasattr") return std::nullopt;
    const auto args = call.field("arguments").named_children();
    if (args.size() != 2 || args[0].text() != "self") return std::nullopt;
    const std::string name = plain_name(args[1]);
    if (name.empty() || stmt.field("alternative")) return std::nullopt;
    std::vector<Node> body;
    for (const Node& c : stmt.field("consequence").named_children()) {
        if (!c.is("comment")) body.push_back(c);
    }
    if (body.size() != 1 || !body[0].is("expression_statement") || body[0].named_children().size() != 1 ||
        !body[0].named_children()[0].is("assignment")) {
        why = fmt::format("the cache `if not hasattr(self, \"{}\")` does more than one assignment", name);
        return Statement{};
    }
    const Node e = body[0].named_children()[0];
    const Node left = e.field("left");
    const Node right = e.field("right");
    const std::string target = "self." + name;
    int count = 0;
    int index = -1;
    if (left.is("attribute") && left.text() == target) {
        index = 0;
    } else if (left.is("pattern_list") || left.is("tuple_pattern")) {
        for (const Node& t : left.named_children()) {
            if (t.text() == target && index < 0) {
                index = count;
            } else if (t.is("identifier")) {
                dead_targets.push_back(text(t));
            } else {
                index = -2;
            }
            ++count;
        }
    }
    if (index < 0 || !right || right.is("assignment")) {
        why = fmt::format("the cache `if not hasattr(self, \"{}\")` assigns `{}`", name, left.text());
        return Statement{};
    }
    // The value may call methods the module holds (self.NAME(...)): taken as pure,
    // which makes the fix unsafe; anything else must be known pure.
    syntax::walk(right, [&](const Node& n) {
        if (!why.empty()) return false;
        if (n.is("call")) {
            const Node fn = n.field("function");
            if (fn.is("attribute") && fn.field("object").text() == "self" && call_impurity(n).size() > 0 &&
                !submodules.contains(text(fn.field("attribute")))) {
                assumed_pure.push_back(fmt::format("{}(...)", fn.text()));
                return true;
            }
            why = call_impurity(n);
            return why.empty();
        }
        if (n.is("lambda") || n.is("named_expression") || n.is("yield") || n.is("await")) {
            why = fmt::format("{} in a branch", construct_name(n));
            return false;
        }
        return true;
    });
    if (!why.empty()) return Statement{};
    const std::string unpack = left.is("attribute") ? "" : fmt::format(", {}, {}", count, index);
    return Statement{Statement::Cache, name, Node(), "",
                     fmt::format("{}(self, \"{}\", lambda: {}{})", runtime::name::cache, name, right.text(), unpack)};
}

std::string Checker::convert(const std::vector<Node>& statements, Branch& out) {
    for (const Node& stmt : statements) {
        if (stmt.is("comment") || stmt.is("pass_statement")) continue;
        if (out.returns) return "a statement after `return`";
        if (auto why = convert_statement(stmt, out); !why.empty()) return why;
    }
    return "";
}

std::string Checker::convert_statement(const Node& stmt, Branch& out) {
    if (stmt.is("return_statement")) return convert_return(stmt, out);
    if (stmt.is("if_statement") && is_raise_check(stmt)) return convert_check(stmt, out);
    if (stmt.is("if_statement")) {
        std::string why;
        if (auto cached = cache_statement(stmt, why)) {
            if (!why.empty()) return why;
            out.body.push_back(std::move(*cached));
            return "";
        }
    }
    if (stmt.is("if_statement") && ctx.values.data_test(ctx.file, stmt.field("condition"))) {
        // The inner `if` is a site of its own; once it is a select, the driver's next pass
        // takes this one up again (a branch may hold a rewritten _graphmend_if).
        nested = true;
        return "a data-dependent `if` inside a branch (the inner one is rewritten first)";
    }
    if (!stmt.is("expression_statement") || stmt.named_children().size() != 1) {
        return fmt::format("{} in a branch", construct_name(stmt));
    }
    const Node e = stmt.named_children()[0];
    for (auto form : {&Checker::rebind, &Checker::set_attr, &Checker::update, &Checker::in_place_call, &Checker::effect}) {
        if (auto why = (this->*form)(e, out)) return *why;
    }
    return assignment(e, out);
}

std::string Checker::convert_return(const Node& stmt, Branch& out) {
    const auto vals = stmt.named_children();
    Node value = vals.empty() ? Node() : vals[0];
    if (value) {
        if (auto why = branch_impurity(value); !why.empty()) return why;
    }
    out.body.push_back({Statement::Return, "", value});
    out.returns = true;
    return "";
}

// A check inside the branch: it must fire only when this branch would have run, so its
// test is gated by the branch's own (Branch::gate).
std::string Checker::convert_check(const Node& stmt, Branch& out) {
    const Node test = stmt.field("condition");
    std::set<std::string> assigned;
    for (const auto& st : out.body) {
        if (st.kind == Statement::Assign) assigned.insert(st.name);
    }
    std::string why;
    syntax::walk(stmt, [&](const Node& n) {
        if (n.is("identifier") && is_read(n) && assigned.contains(text(n))) {
            why = fmt::format("the check in the branch reads `{}`, assigned earlier in the branch", n.text());
        }
        return why.empty();
    });
    if (why.empty()) why = impurity(test);
    if (!why.empty()) return why;
    std::vector<Node> body;
    for (const Node& c : stmt.field("consequence").named_children()) {
        if (!c.is("comment")) body.push_back(c);
    }
    CheckCall c = check_call(body[0]);
    if (!c.refused.empty()) return "the check in the branch: " + c.refused;
    Statement st{Statement::Check, "", test, predicate(test)};
    st.check = std::move(c);
    out.body.push_back(std::move(st));
    return "";
}

// `self.register_buffer("NAME", VALUE, ...)`: the buffer is rebound.
std::optional<std::string> Checker::rebind(const Node& e, Branch& out) {
    if (!e.is("call") || e.field("function").text() != "self.register_buffer") return std::nullopt;
    const auto args = e.field("arguments").named_children();
    const std::string name = args.empty() ? "" : plain_name(args[0]);
    if (name.empty()) return fmt::format("`{}`: the buffer's name is not a literal", e.text());
    for (std::size_t i = 1; i < args.size(); ++i) {
        const Node v = args[i].is("keyword_argument") ? args[i].field("value") : args[i];
        if (auto why = impurity(v); !why.empty()) return why;
    }
    out.body.push_back({Statement::Rebind, name, Node(), "", std::string(e.text())});
    return "";
}

// `self.NAME = self.NAME.to(...)`: a no-op where device and dtype do not change.
std::optional<std::string> Checker::set_attr(const Node& e, Branch& out) {
    if (!(e.is("assignment") && e.field("left").is("attribute") && e.field("left").field("object").text() == "self" &&
          e.field("right") && e.field("right").is("call"))) {
        return std::nullopt;
    }
    const Node left = e.field("left");
    const Node fn = e.field("right").field("function");
    bool copies = false;
    for (const Node& a : e.field("right").field("arguments").named_children()) {
        copies = copies || (a.is("keyword_argument") && a.field("name").text() == "copy");
    }
    if (!(fn.is("attribute") && fn.field("attribute").text() == "to" && fn.field("object").text() == left.text() &&
          !copies)) {
        return std::nullopt;
    }
    if (auto why = impurity(e.field("right")); !why.empty()) return why;
    out.body.push_back({Statement::SetAttr, text(left.field("attribute")), Node(), "",
                        fmt::format("{}(self, \"{}\", {}, converts=True)", runtime::name::set_attr,
                                    text(left.field("attribute")), e.field("right").text())});
    return "";
}

// `self.BUFFER += INT`: a counter; the update stays conditional on the data. Any other
// augmented assignment is refused.
std::optional<std::string> Checker::update(const Node& e, Branch& out) {
    if (!e.is("augmented_assignment")) return std::nullopt;
    const Node left = e.field("left");
    const std::string op(e.field("operator").text());
    if (left.is("attribute") && left.field("object").text() == "self" &&
        buffers.contains(text(left.field("attribute"))) && (op == "+=" || op == "-=") &&
        e.field("right").is("integer")) {
        out.body.push_back({Statement::Update, text(left.field("attribute")), e.field("right"), "", op});
        return "";
    }
    return fmt::format("in-place update `{}`", e.text());
}

// `NAME.OP_(ARGS)` on a fresh local (fresh_local, checked once the branches are converted): an
// Assign of NAME to a clone changed in place, `NAME.clone().OP_(ARGS)` (`NAME.copy_(SRC)`: to
// `_graphmend_copy(NAME, SRC)`). A clone and the in-place op keep the op's dtype, broadcasting
// and errors, which an out-of-place form (`add` for `add_`) would not: it promotes.
std::optional<std::string> Checker::in_place_call(const Node& e, Branch& out) {
    Node call = e;
    if (e.is("assignment") && e.field("left").is("identifier") && e.field("right")) call = e.field("right");
    if (!(call.is("call") && call.field("function").is("attribute") &&
          knowledge::in_place(call.field("function").field("attribute").text()) &&
          call.field("function").field("object").is("identifier"))) {
        return std::nullopt;
    }
    const Node receiver = call.field("function").field("object");
    const std::string name = text(receiver);
    if (e.is("assignment") && e.field("left").text() != name) return std::nullopt;
    const std::string method = text(call.field("function").field("attribute"));
    const auto args = call.field("arguments").named_children();
    if (!site_def || !site_stmt || knowledge::keeps_argument(method) || knowledge::random_op(method)) {
        return fmt::format("in-place `{}` on a tensor that outlives the branch", one_line(call.text()));
    }
    for (const Node& a : args) {
        if (a.is("comment")) continue;
        if (auto why = branch_impurity(a.is("keyword_argument") ? a.field("value") : a); !why.empty()) return why;
    }
    changed_in_place[name].insert(receiver.begin());
    Statement st{Statement::Assign, name, call};
    if (method == "copy_" && args.size() == 1 && !args[0].is("keyword_argument")) {
        st.copy = true;
    } else {
        st.clones.insert(receiver.begin());
    }
    out.body.push_back(std::move(st));
    return "";
}

// A print / logging / warnings call, deferred with the test; any other call is refused.
std::optional<std::string> Checker::effect(const Node& e, Branch& out) {
    if (!e.is("call")) return std::nullopt;
    const auto deferred = deferred_call(ctx, e);
    if (!deferred) return fmt::format("the branch has an effect: {}(...)", e.field("function").text());
    if (!deferred->refused.empty()) return "the branch's " + std::string(e.field("function").text()) +
                                           "(...) cannot be deferred: " + deferred->refused;
    const auto parts = [&](const std::string& leading) {
        return fmt::format("\"{}\", {}, lambda: {}({})", deferred->kind, leading.empty() ? "()" : "(" + leading + ",)",
                           runtime::name::args, deferred->arguments);
    };
    Statement st{Statement::Effect, "", Node(), parts(deferred->leading)};
    st.condition = deferred->condition;
    st.marked = parts(deferred->leading_marked);
    st.line = deferred->line;
    out.body.push_back(std::move(st));
    return "";
}

// `NAME = VALUE`, or `a, b = VALUE` -> `_graphmend_unpackN := VALUE`, then a = ...[0],
// b = ...[1]; stores into attributes or items are refused.
std::string Checker::assignment(const Node& e, Branch& out) {
    if (!e.is("assignment") || !e.field("right")) return fmt::format("{} in a branch", construct_name(e));
    const Node left = e.field("left");
    const Node right = e.field("right");
    if (left.is("attribute") || left.is("subscript")) {
        return fmt::format("the branch stores into `{}` (module or tensor state)", left.text());
    }
    if (right.is("assignment")) return "a chained assignment";
    // A call that changes NAME in place may take a clone of it (clone_arguments).
    if (left.is("identifier")) clone_target = text(left);
    pending_clones.clear();
    auto why = branch_impurity(right);
    clone_target.clear();
    if (!why.empty()) return why;
    if (left.is("pattern_list") || left.is("tuple_pattern")) {
        std::vector<std::string> names;
        for (const Node& t : left.named_children()) {
            if (!t.is("identifier")) return fmt::format("unpacking assignment `{} = ...`", left.text());
            names.push_back(text(t));
        }
        const std::string temp = fmt::format("unpack{}", ++unpacks);
        out.body.push_back({Statement::Assign, temp, right});
        for (std::size_t i = 0; i < names.size(); ++i) {
            out.body.push_back({Statement::Assign, names[i], Node(), "", fmt::format("_graphmend_{}[{}]", temp, i)});
        }
        return "";
    }
    if (!left.is("identifier")) return fmt::format("unpacking assignment `{} = ...`", left.text());
    Statement st{Statement::Assign, text(left), right};
    st.clones = std::move(pending_clones);
    out.body.push_back(std::move(st));
    return "";
}

Node init_of(const Context& ctx, const Node& function) {
    for (Node p = function.parent(); p; p = p.parent()) {
        if (!p.is("class_definition")) continue;
        const auto& classes = ctx.source().index.classes;
        const auto it = classes.find(text(p.field("name")));
        if (it == classes.end()) return Node();
        const auto init = it->second.methods.find("__init__");
        return init == it->second.methods.end() ? Node() : init->second;
    }
    return Node();
}

std::map<std::string, std::string> submodules_of(const Context& ctx, const Node& function) {
    std::map<std::string, std::string> out;
    const Node init = init_of(ctx, function);
    if (!init) return out;
    syntax::walk(init, [&](const Node& n) {
        if (!n.is("assignment")) return true;
        const Node left = n.field("left");
        const Node right = n.field("right");
        if (left.is("attribute") && left.field("object").text() == "self" && right.is("call")) {
            const Node fn = right.field("function");
            const std::string_view cls_name = fn.is("attribute") ? fn.field("attribute").text() : fn.text();
            const std::string_view root = fn.is("attribute") ? fn.field("object").text() : "";
            const bool from_torch = root == "nn" || root == "torch.nn" ||
                                    (fn.is("identifier") && ctx.source().index.find_import(text(fn)) != nullptr &&
                                     ctx.source().index.find_import(text(fn))->module.starts_with("torch"));
            if (from_torch) out[text(left.field("attribute"))] = std::string(cls_name);
        }
        return true;
    });
    return out;
}

std::set<std::string> buffers_of(const Context& ctx, const Node& function) {
    std::set<std::string> out;
    const Node init = init_of(ctx, function);
    if (!init) return out;
    syntax::walk(init, [&](const Node& n) {
        if (n.is("call") && n.field("function").text() == "self.register_buffer") {
            const auto args = n.field("arguments").named_children();
            if (!args.empty() && args[0].is("string")) {
                std::string name(args[0].text());
                out.insert(name.substr(1, name.size() - 2));
            }
        }
        return true;
    });
    return out;
}

}  // namespace graphmend::rules::control_flow

// The value analysis: the value of an expression in a function's frame (eval_in and its
// forms), and the queries the rules ask of it. See include/graphmend/values.hpp.
#include "values_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

namespace graphmend::analysis {

using syntax::Node;

bool is_identity_or_membership(const Node& comparison) {
    for (const Node& c : comparison.children()) {
        if (c.named()) continue;
        if (!c.is("is") && !c.is("not") && !c.is("is not") && !c.is("in") && !c.is("not in") && !c.is("(") &&
            !c.is(")")) {
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

Value Values::eval_in(const Frame& f, const Node& e, int depth) const {
    if (!e || depth > kMaxDepth) return Value::of(kUnknown);
    if (const Value lit = literal(e); lit.kinds) return lit;
    if (e.is("parenthesized_expression")) {
        const auto parts = e.named_children();
        return parts.empty() ? Value::of(kUnknown) : eval_in(f, parts.back(), depth + 1);
    }
    if (e.is("identifier")) {
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
        if (solving_ && f.summary && called_.contains({f.summary->file, f.summary->fn.begin()}) &&
            std::find(f.summary->params.begin(), f.summary->params.end(), name) != f.summary->params.end()) {
            return {};  // not filled by a call yet (solving_)
        }
        // A local no binding has given a value yet (its function not analysed yet, or its
        // producer not valued yet) is no value while solving, as a parameter not filled.
        if (f.locals->contains(name)) return solving_ ? Value{} : Value::of(kUnknown);
        if (!dotted_torch(f.file, e).empty() || project_.files()[f.file].index.find_import(name)) {
            return Value::of(kOther);
        }
        return Value::of(kUnknown);
    }
}

Value Values::eval_rest(const Frame& f, const Node& e, int depth) const {
    if (e.is("attribute")) {
        const Node obj = e.field("object");
        const std::string attr = text(e.field("attribute"));
        if (obj.is("identifier") && obj.text() == "self" && f.summary && !f.summary->owner.empty() &&
            (!f.env || !f.env->contains("self") || f.env->at("self").kinds == kModule)) {
            return self_attribute(f.file, f.summary->owner, attr);
        }
        if (!dotted_torch(f.file, e).empty()) return Value::of(kOther);
        const Value recv = eval_in(f, obj, depth + 1);
        if (recv.kinds == 0) return {};  // no value yet (solving_)
        if (const auto c = instance_of(recv); c && recv.kinds == kOther) return self_attribute(c->first, c->second, attr);
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
    if (e.is("call")) return call_value(f, e, depth);
    if (e.is("binary_operator")) {
        const Value l = eval_in(f, e.field("left"), depth + 1);
        const Value r = eval_in(f, e.field("right"), depth + 1);
        if (l.kinds == 0 || r.kinds == 0) return {};  // no value yet (solving_)
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
    if (e.is("unary_operator")) return eval_in(f, e.field("argument"), depth + 1);
    if (e.is("not_operator")) {
        const Value a = eval_in(f, e.field("argument"), depth + 1);
        return Value::of(kBool, a.data || a.tensor());
    }
    if (e.is("boolean_operator")) {
        return join(eval_in(f, e.field("left"), depth + 1), eval_in(f, e.field("right"), depth + 1));
    }
    if (e.is("comparison_operator")) {
        if (is_identity_or_membership(e)) return Value::of(kBool);
        Value v = Value::of(kBool);
        for (const Node& c : e.named_children()) {
            const Value x = eval_in(f, c, depth + 1);
            if (x.kinds == 0) return {};  // no value yet (solving_)
            if (x.tensor()) v = Value::of(kTensor);
            v.data = v.data || x.data;
        }
        return v;
    }
    if (e.is("conditional_expression")) {
        const auto parts = e.named_children();
        if (parts.size() == 3) return join(eval_in(f, parts[0], depth + 1), eval_in(f, parts[2], depth + 1));
        return Value::of(kUnknown);
    }
    if (e.is("tuple") || e.is("expression_list") || e.is("list")) {
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
    if (e.is("subscript")) {
        const Value base = eval_in(f, e.field("value"), depth + 1);
        if (base.kinds == 0) return {};  // no value yet (solving_)
        if (base.only(kTensor) || base.only(kTensor | kNone)) return Value::of(kTensor);
        if (base.only(kSize)) {
            const Node idx = e.field("subscript");
            return Value::of(idx && idx.is("slice") ? kSize : kNumber);
        }
        const auto i = syntax::int_value(e.field("subscript"));
        if (!base.items.empty() && i) {
            const auto n = static_cast<std::int64_t>(base.items.size());
            if (*i >= -n && *i < n) return base.items[static_cast<std::size_t>(*i < 0 ? *i + n : *i)];
        }
        if (!base.items.empty()) return join_items(base.items);
        return Value::of(kUnknown, base.data);
    }
    if (e.is("lambda")) return Value::of(kOther);
    if (e.is("list_comprehension") || e.is("generator_expression") || e.is("dictionary") ||
        e.is("set") || e.is("dictionary_comprehension") || e.is("set_comprehension")) {
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
    if (e.is("await") || e.is("yield")) return Value::of(kUnknown);
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
    return v.tensor() || v.data || dynamo_data_test(file, test);
}

namespace {

// True when one of `lines` (1-based) lies within the lines `node` spans.
bool spans_a_line(const std::vector<std::uint32_t>& lines, const Node& node) {
    if (lines.empty()) return false;
    const std::uint32_t first = node.position().line;
    const std::uint32_t last = node.source().position(node.end() > node.begin() ? node.end() - 1 : node.end()).line;
    return std::any_of(lines.begin(), lines.end(), [&](std::uint32_t l) { return l >= first && l <= last; });
}

}  // namespace

// Whether Dynamo reported a data-dependent branch (GB0170) on a line of `test` in the original
// run (SourceFile::data_tests, from `graphmend verify`): its evidence holds where the analysis
// cannot tell, as for an unannotated parameter a library's caller passes a tensor.
bool Values::dynamo_data_test(std::size_t file, const Node& test) const {
    return spans_a_line(project_.files()[file].data_tests, test);
}

bool Values::dynamo_data_read(std::size_t file, const Node& expr) const {
    return spans_a_line(project_.files()[file].data_reads, expr);
}

bool Values::dynamo_data_operator(std::size_t file, const Node& expr) const {
    return spans_a_line(project_.files()[file].data_operators, expr);
}

std::string Values::unsettled_callable(std::size_t file, const Node& test) const {
    Node fn = analysis::enclosing_function(test);
    while (fn && !fn.is("function_definition")) fn = analysis::enclosing_function(fn);
    const Summary* s = fn ? summary_of(file, fn) : nullptr;
    if (!test || !s) return {};
    // The calls of names in the test, and in the assignments of the names it reads.
    std::vector<Node> calls;
    auto collect = [&](const Node& e) {
        syntax::walk(e, [&](const Node& n) {
            if (n.is("lambda")) return false;
            if (n.is("call") && n.field("function").is("identifier")) calls.push_back(n);
            return true;
        });
    };
    collect(test);
    syntax::walk(test, [&](const Node& n) {
        if (n.is("lambda") || n.is("attribute")) return false;
        if (!n.is("identifier") || !s->locals.contains(text(n))) return true;
        for (const Node& b : s->bindings) {
            if (b.is("assignment") && b.field("left").text() == n.text() && b.field("right")) collect(b.field("right"));
        }
        return true;
    });
    for (const Node& call : calls) {
        const std::string name = text(call.field("function"));
        const PassedCallable* passed = project_.passed_callable(file, fn.begin(), name);
        if (passed == nullptr || passed->sites == 0 || passed->only() != nullptr) continue;
        if (passed->unknown.empty()) {
            // Several known functions: a test none of them can make read data is static.
            bool maybe = false;
            for (const FunctionRef& c : passed->callees) {
                const Summary* callee = c.node.is("function_definition") ? summary_of(c.file, c.node) : nullptr;
                maybe = maybe || callee == nullptr || callee->ret.tensor() || callee->ret.data ||
                        (callee->ret.kinds & kUnknown) != 0;
            }
            if (!maybe) continue;
        }
        return fmt::format("the test's value comes from `{}(...)`, a call of a parameter whose function is not known "
                           "(it may read tensor data): {}",
                           name, passed->why_unknown(name));
    }
    return {};
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

Value Values::element_value(const Frame& f, const Node& iterable, int depth) const {
    Node it = iterable;
    while (it.is("parenthesized_expression") && it.named_children().size() == 1) it = it.named_children()[0];
    if (depth > 8) return Value::of(kUnknown);
    if (it.is("list_comprehension") || it.is("generator_expression")) {
        return eval_in(f, it.field("body"), depth + 1);
    }
    if (it.is("call") && it.field("function").is("identifier") &&
        !(f.locals && f.locals->contains(text(it.field("function"))))) {
        const std::string name = text(it.field("function"));
        std::vector<Node> args;
        for (const Node& a : it.field("arguments").named_children()) {
            if (a.is("comment")) continue;
            if (a.is("keyword_argument") || a.is("list_splat") || a.is("dictionary_splat")) return Value::of(kUnknown);
            args.push_back(a);
        }
        if (name == "range") return Value::of(kNumber, eval_in(f, it, depth + 1).data);
        if (name == "zip" && !args.empty()) {
            Value v = Value::of(kSeq);
            for (const Node& a : args) v.items.push_back(element_value(f, a, depth + 1));
            return v;
        }
        if (name == "enumerate" && args.size() == 1) {
            Value v = Value::of(kSeq);
            v.items = {Value::of(kNumber), element_value(f, args[0], depth + 1)};
            return v;
        }
        if ((name == "reversed" || name == "sorted" || name == "list" || name == "tuple") && args.size() == 1) {
            return element_value(f, args[0], depth + 1);
        }
    }
    const Value v = eval_in(f, it, depth + 1);
    if (v.kinds == 0 && solving_) return Value{};  // no value yet (a parameter not filled)
    Value elem = v.only(kTensor)       ? Value::of(kTensor)
                 : !v.items.empty()    ? join_items(v.items)
                 : v.only(kSize)       ? Value::of(kNumber)
                                       : Value::of(kUnknown);
    elem.data = elem.data || v.data;
    return elem;
}

}  // namespace graphmend::analysis

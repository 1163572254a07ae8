// Print / logging / warnings.warn calls and their deferred form: see
// src/rules/support/deferred_call.hpp.
#include "deferred_call.hpp"

#include <fmt/format.h>

#include <set>

#include "graphmend/knowledge.hpp"
#include "lazy_message.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

enum class Kind { None, Print, Log, Warn };

struct Call {
    Kind kind = Kind::None;
    std::string logger;  // Log: the module-level name of the logger
    std::string method;  // Log: the method name
    std::string detail;  // Log: where an imported logger comes from, and what was assumed of it
    std::string unknown;  // Log: why an imported name that says logger is not known to be one
};

// The names a function and the functions around it bind.
std::set<std::string> visible_locals(const Node& call) {
    std::set<std::string> names;
    for (Node f = analysis::enclosing_function(call); f; f = analysis::enclosing_function(f)) {
        if (f.is("function_definition")) names.merge(analysis::local_names(f));
    }
    return names;
}

bool module_binds(const analysis::ModuleIndex& idx, const std::string& name) {
    return idx.assigned.contains(name) || idx.functions.contains(name) || idx.classes.contains(name) ||
           idx.find_import(name) != nullptr || idx.loggers.contains(name);
}

Call classify(const Node& call, const Context& ctx) {
    const analysis::ModuleIndex& idx = ctx.source().index;
    const Node fn = call.field("function");
    if (fn.is("identifier")) {
        const std::string name(fn.text());
        if (name == "print" && !module_binds(idx, name)) return {Kind::Print, "", ""};
        if (const auto* imp = idx.find_import(name);
            imp && knowledge::warning_function(imp->module, imp->name) && imp->level == 0) {
            return {Kind::Warn, "", ""};
        }
        return {};
    }
    if (!fn.is("attribute")) return {};
    const Node obj = fn.field("object");
    const std::string attr(fn.field("attribute").text());
    if (!obj.is("identifier")) return {};
    const std::string base(obj.text());
    if (idx.loggers.contains(base) && knowledge::logger_method(attr)) return {Kind::Log, base, attr};
    if (const auto it = idx.not_loggers.find(base); it != idx.not_loggers.end() && knowledge::logger_method(attr)) {
        return {Kind::Log, base, attr, "",
                fmt::format("`{}` is {}: the runtime replays a deferred record through a logging.Logger's "
                            "makeRecord and handle",
                            base, it->second)};
    }
    if (const auto* imp = idx.find_import(base);
        imp && imp->name.empty() && knowledge::warning_function(imp->module, attr)) {
        return {Kind::Warn, "", ""};
    }
    // A logger the module imports (`from .log_utils import logger`): the runtime finds it by
    // its name in the module's globals, where the import binds it, as the call did.
    if (knowledge::logger_method(attr)) {
        const analysis::ImportedLogger l = ctx.project.imported_logger(ctx.file, base);
        switch (l.kind) {
            case analysis::ImportedLogger::Logger:
            case analysis::ImportedLogger::Assumed:
                return {Kind::Log, base, attr, l.detail, ""};
            case analysis::ImportedLogger::Unknown:
                return {Kind::Log, base, attr, "", l.detail};
            case analysis::ImportedLogger::None:
                break;
        }
    }
    return {};
}

// classify(), unless the name is a local of the function: not the builtin or the
// module-level binding.
Call classify_site(const Node& call, const Context& ctx) {
    const Call c = classify(call, ctx);
    if (c.kind == Kind::None) return c;
    const auto locals = visible_locals(call);
    const std::string fn(call.field("function").text());
    if ((c.kind == Kind::Print && locals.contains("print")) || (c.kind == Kind::Log && locals.contains(c.logger)) ||
        (c.kind == Kind::Warn && locals.contains(fn.substr(0, fn.find('.'))))) {
        return {};
    }
    return c;
}

// Python 3.11+ attributes a call to the line of its last name (`.warning`).
std::uint32_t call_line(const Node& call) {
    const Node fn = call.field("function");
    return (fn.is("attribute") ? fn.field("attribute") : fn).position().line;
}

// The line argument of a helper call written where `call` starts: `lambda: None` (the runtime
// reads the line from its code) when that is the call's line, else the line itself.
std::string line_marker(const Node& call) {
    const std::uint32_t line = call_line(call);
    return call.position().line == line ? std::string("lambda: None") : fmt::format("{}", line);
}

std::string function_name(const Node& call) {
    Node def = analysis::enclosing_function(call);
    while (def && !def.is("function_definition")) def = analysis::enclosing_function(def);
    return def ? std::string(def.field("name").text()) : "<module>";
}

struct Arguments {
    std::vector<Node> positional;
    std::vector<std::pair<std::string, Node>> keywords;
    bool splat_kwargs = false;
};

Arguments arguments_of(const Node& call) {
    Arguments a;
    for (const Node& n : call.field("arguments").named_children()) {
        if (n.is("comment")) continue;
        if (n.is("keyword_argument")) {
            a.keywords.emplace_back(std::string(n.field("name").text()), n.field("value"));
        } else if (n.is("dictionary_splat")) {
            a.splat_kwargs = true;
        } else {
            a.positional.push_back(n);
        }
    }
    return a;
}

// Why the call cannot be deferred, or "" when it can.
std::string refusal(const Call& c, const Node& call, const Arguments& args) {
    if (!call.parent().is("expression_statement")) {
        return "the call's value is used; only a call whose value is discarded can be deferred";
    }
    if (!call.field("arguments").is("argument_list")) return "not an ordinary argument list";
    if (args.splat_kwargs) return "**kwargs: the keyword arguments cannot be checked before run time";
    switch (c.kind) {
        case Kind::Print:
            for (const auto& [k, v] : args.keywords) {
                if (k == "file" && v.text() != "sys.stdout" && v.text() != "sys.stderr" && v.text() != "None") {
                    return fmt::format("print(file={}): only sys.stdout and sys.stderr are delivered after the "
                                       "graph runs",
                                       v.text());
                }
            }
            return "";
        case Kind::Log:
            if (c.method == "exception") return "logger.exception reads the exception being handled";
            for (const auto& [k, v] : args.keywords) {
                if (k == "exc_info" || k == "stack_info" || k == "stacklevel") {
                    return fmt::format("{}=: it reads the live stack or exception, which do not exist after the "
                                       "graph runs",
                                       k);
                }
            }
            return "";
        case Kind::Warn: {
            for (const auto& [k, v] : args.keywords) {
                if (k == "stacklevel" && v.text() != "1") {
                    return fmt::format("stacklevel={}: the warning's location is a caller's frame, which does not "
                                       "exist after the graph runs",
                                       v.text());
                }
                if (k == "source" || k == "skip_file_prefixes") {
                    return fmt::format("{}=: not carried through the graph", k);
                }
            }
            if (args.positional.size() >= 3 && args.positional[2].text() != "1") {
                return fmt::format("stacklevel={}: the warning's location is a caller's frame, which does not "
                                   "exist after the graph runs",
                                   args.positional[2].text());
            }
            if (args.positional.size() >= 4) return "source: not carried through the graph";
            return "";
        }
        case Kind::None:
            break;
    }
    return "not a deferrable call";
}

// The name an expression starts from: `a` of `a.b[c].d(e)`; empty for a literal.
Node root_name(Node e) {
    while (true) {
        if (e.is("attribute")) {
            e = e.field("object");
        } else if (e.is("subscript")) {
            e = e.field("value");
        } else if (e.is("call")) {
            e = e.field("function");
        } else if (e.is("parenthesized_expression") && e.named_children().size() == 1) {
            e = e.named_children()[0];
        } else {
            return e.is("identifier") ? e : Node{};
        }
    }
}

// True when a message value may be a tensor: the analysis shows one, or it cannot tell the
// value (no producer seen, or an unknown one) and the value starts from a name of the function
// (a parameter, a local, `self`): a library function's argument may be the caller's tensor
// requiring grad. A module-level or builtin name (`FutureWarning`, a constant) is no tensor
// the call's frame made.
bool may_hold_tensor(const Context& ctx, const Node& v) {
    const analysis::Value value = ctx.values.eval(ctx.file, v);
    if (value.tensor()) return true;
    if (value.kinds != 0 && (value.kinds & analysis::kUnknown) == 0) return false;
    // Metadata, whatever holds it: `x.shape[0]`, `x.dtype`, `x.size(1)`, `x.dim()`.
    static const std::set<std::string, std::less<>> metadata{"shape", "ndim", "dtype", "device", "size",
                                                             "dim", "numel", "__name__", "__class__"};
    for (Node e = v; e.is("attribute") || e.is("subscript") || e.is("call");) {
        if (e.is("attribute") && metadata.contains(e.field("attribute").text())) return false;
        e = e.is("attribute") ? e.field("object") : e.is("subscript") ? e.field("value") : e.field("function");
    }
    const Node root = root_name(v);
    return root && visible_locals(v).contains(std::string(root.text()));
}

}  // namespace

std::vector<Node> message_arguments(const Node& call) {
    std::vector<Node> out;
    const Node list = call.field("arguments");
    if (!list.is("argument_list")) return out;
    for (const Node& n : list.named_children()) {
        if (n.is("comment") || n.is("dictionary_splat")) continue;
        out.push_back(n.is("keyword_argument") ? n.field("value") : n.is("list_splat") ? n.named_children()[0] : n);
    }
    return out;
}

std::string message_condition(const Context& ctx, const std::vector<Node>& arguments) {
    std::vector<Node> values;
    for (const Node& a : arguments) message_values(a, values);
    for (const Node& v : values) {
        if (may_hold_tensor(ctx, v)) return "no message tensor requiring grad";
    }
    return "";
}

std::optional<DeferredCall> deferred_call(const Context& ctx, const Node& call) {
    if (!call.is("call")) return std::nullopt;
    const Call c = classify_site(call, ctx);
    if (c.kind == Kind::None) return std::nullopt;
    const Arguments args = arguments_of(call);
    DeferredCall out;
    out.refused = c.unknown.empty() ? refusal(c, call, args) : c.unknown;
    out.detail = c.detail;
    out.positional = args.positional;
    if (out.refused.empty()) out.condition = message_condition(ctx, message_arguments(call));
    switch (c.kind) {
        case Kind::Print:
            out.kind = "print";
            break;
        case Kind::Log:
            out.kind = "log";
            out.leading = fmt::format("\"{}\", \"{}\", {}, \"{}\"", c.logger, c.method, call_line(call),
                                      function_name(call));
            out.leading_in_place = fmt::format("\"{}\", \"{}\", {}, \"{}\"", c.logger, c.method, line_marker(call),
                                               function_name(call));
            out.leading_marked = fmt::format("\"{}\", \"{}\", lambda: None, \"{}\"", c.logger, c.method,
                                             function_name(call));
            break;
        default:
            out.kind = "warn";
            out.leading = fmt::format("{}", call_line(call));
            out.leading_in_place = line_marker(call);
            out.leading_marked = "lambda: None";
            break;
    }
    out.line = call_line(call);
    const Node list = call.field("arguments");
    if (!list.is("argument_list")) return out;
    const std::string_view src = call.source().text();
    std::uint32_t cursor = list.begin() + 1;
    for (const Node& a : args.positional) {
        if (auto deferred = defer_message_expression(a)) {
            out.arguments += src.substr(cursor, a.begin() - cursor);
            out.arguments += *deferred;
            cursor = a.end();
        }
    }
    out.arguments += src.substr(cursor, list.end() - 1 - cursor);
    return out;
}

}  // namespace graphmend::rules

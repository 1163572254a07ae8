// The check call of a raise: see src/rules/support/check_call.hpp.
#include "check_call.hpp"

#include <fmt/format.h>

#include "graphmend/runtime_sources.hpp"
#include "lazy_message.hpp"

namespace graphmend::rules {

using syntax::Node;

namespace {

// The argument list text of a call with its message arguments deferred.
std::string deferred_arguments(const Node& call) {
    const Node list = call.field("arguments");
    const std::string_view src = call.source().text();
    std::string out;
    std::uint32_t cursor = list.begin() + 1;
    for (const Node& a : list.named_children()) {
        if (a.is("comment") || a.is("keyword_argument") || a.is("list_splat") || a.is("dictionary_splat")) continue;
        if (auto deferred = defer_message_expression(a)) {
            out += src.substr(cursor, a.begin() - cursor);
            out += *deferred;
            cursor = a.end();
        }
    }
    out += src.substr(cursor, list.end() - 1 - cursor);
    return out;
}

}  // namespace

std::string CheckCall::text(std::string_view pred) const {
    return fmt::format("{}({}{}", runtime::name::check, pred, arguments);
}

CheckCall check_call(const Node& raise) {
    const auto parts = raise.named_children();
    if (parts.empty()) return {"", "a bare `raise` re-raises the exception being handled"};
    const Node cause = raise.field("cause");
    const bool from_none = cause && cause.is("none");
    if ((cause && !from_none) || parts.size() > (from_none ? 2u : 1u)) {
        return {"", "`raise ... from CAUSE`: only `from None` is carried through the graph"};
    }
    const Node exc = parts[0];
    if (!exc.is("call") || !exc.field("arguments").is("argument_list")) {
        return {"", "raises an object rather than calling an exception class"};
    }
    return {fmt::format(", {}, lambda: {}({}){})", exc.field("function").text(), runtime::name::args,
                        deferred_arguments(exc), from_none ? ", from_none=True" : ""),
            ""};
}

}  // namespace graphmend::rules

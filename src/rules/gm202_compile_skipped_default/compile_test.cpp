// GM202 compile-skipped-default: compile tests (see compile_skipped_default.hpp).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "compile_skipped_default.hpp"

namespace graphmend::rules::compile_skipped {

namespace {

std::string last_part(std::string_view dotted) {
    const auto dot = dotted.rfind('.');
    return std::string(dot == std::string_view::npos ? dotted : dotted.substr(dot + 1));
}

// The call in `not is_torchdynamo_compiling()` (torch.compiler.is_compiling(),
// torch._dynamo.is_compiling(), torch.compiler.is_dynamo_compiling()), or a null node.
Node compile_test_call(const Node& n) {
    const Node e = syntax::without_parens(n);
    if (!e.is("not_operator")) return {};
    const Node call = syntax::without_parens(e.field("argument"));
    if (!call.is("call") || !call.field("arguments").named_children().empty()) return {};
    const std::string name = last_part(call.field("function").text());
    const bool named = name == "is_torchdynamo_compiling" || name == "is_compiling" || name == "is_dynamo_compiling";
    return named ? call : Node{};
}

// True when Dynamo skips the frame of `fn` ("skipping because no torch.*": torch's
// has_tensor_in_frame, torch 2.12.1 and 2.15.0): `fn` takes no parameters, and its module
// binds no global to torch or a torch.* module, so none of the names its code reads is one.
// That is transformers' `is_torchdynamo_compiling` (transformers/utils/import_utils.py imports
// torch inside its functions), whatever the folder holding the package is named.
bool skipped_for_no_torch(const analysis::ModuleIndex& module, const Node& fn) {
    if (const Node params = fn.field("parameters"); params && !params.named_children().empty()) return false;
    if (module.assigned.contains("torch") || module.functions.contains("torch") || module.classes.contains("torch")) {
        return false;
    }
    return std::none_of(module.imports.begin(), module.imports.end(), [](const analysis::Import& imp) {
        const std::string full = imp.name.empty() ? imp.module : imp.module + "." + imp.name;
        return imp.local == "torch" || (imp.level == 0 && (full == "torch" || full.starts_with("torch.")));
    });
}

// A function of the project whose body (past its docstring) is `return TEST()`, TEST a
// compile test: a wrapper.
bool wraps_compile_test(const Context& ctx, const Node& call) {
    const auto ref = ctx.project.callee(ctx.file, call, {});
    if (!ref || !ref->node.is("function_definition")) return false;
    std::vector<Node> body;
    for (const Node& s : ref->node.field("body").named_children()) {
        if (s.is("comment")) continue;
        if (body.empty() && s.is("expression_statement") && s.named_children().size() == 1 &&
            s.named_children()[0].is("string")) {
            continue;
        }
        body.push_back(s);
    }
    if (body.size() != 1 || !body[0].is("return_statement") || body[0].named_children().size() != 1) return false;
    const Node r = syntax::without_parens(body[0].named_children()[0]);
    if (!r.is("call") || !r.field("arguments").named_children().empty()) return false;
    const std::string name = last_part(r.field("function").text());
    return name == "is_torchdynamo_compiling" || name == "is_compiling" || name == "is_dynamo_compiling";
}

}  // namespace

// True when the compile test returns False when Dynamo, having abandoned the frame, runs it
// eagerly (its callback still intercepts the frames the eager run calls):
// - torch's own tests: Dynamo skips torch's files ("in skipfiles");
// - transformers' `is_torchdynamo_compiling`: its module (transformers/utils/import_utils.py)
//   binds no global `torch`, so Dynamo skips the helper's frame ("skipping because no
//   torch.*", torch 2.12.1 with transformers 4.52.4 and torch 2.15.0 with 5.24.0).
// A project's own wrapper that Dynamo traces returns True there: the default is not made
// and the original raises, so it is not known.
bool false_when_abandoned(const Context& ctx, const Node& call) {
    const Node fn = call.field("function");
    const std::string ext = ctx.project.external_name(ctx.file, fn);
    if (ext == "torch.compiler.is_compiling" || ext == "torch._dynamo.is_compiling" ||
        ext == "torch.compiler.is_dynamo_compiling" || ext == "torch._utils.is_compiling" ||
        ext == "torch._dynamo.external_utils.is_compiling") {
        return true;
    }
    if (ext.rfind("transformers.", 0) == 0 && last_part(ext) == "is_torchdynamo_compiling") return true;
    if (const auto ref = ctx.project.callee(ctx.file, call, {})) {
        return ref->node.is("function_definition") && ref->node.field("name").text() == "is_torchdynamo_compiling" &&
               skipped_for_no_torch(ctx.project.files()[ref->file].index, ref->node);
    }
    return false;
}

Node compile_test_in(const Context& ctx, const Node& n) {
    if (Node c = compile_test_call(n)) return c;
    const Node e = syntax::without_parens(n);
    if (!e.is("not_operator")) return {};
    const Node call = syntax::without_parens(e.field("argument"));
    if (call.is("call") && call.field("arguments").named_children().empty() && wraps_compile_test(ctx, call)) {
        return call;
    }
    return {};
}

}  // namespace graphmend::rules::compile_skipped

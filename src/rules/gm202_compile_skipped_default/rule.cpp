// Rule GM202 compile-skipped-default.
//
// What it does: finds a default that the code skips while Dynamo traces it,
//     if N is None and not is_torchdynamo_compiling():
//         N = DEFAULT
// where the code below, on a path chosen by static tests (attributes of `self`, literals),
// then uses N in a way that raises on None: `N[...]`, `N.attr`, or N passed to a function
// of the project whose first use of that parameter is one of those (transformers 4.x
// LongT5Stack.forward and SwitchTransformersStack.forward). It rewrites the compile test
// so that the default is made on those paths under torch.compile too:
//     if N is None and (not is_torchdynamo_compiling() or (PATH)):
//
// Why: traced, N stays None and the use raises inside the trace. Dynamo finds no handler
// for it, abandons the whole frame ("Observed exception", GB0088, torch 2.12) and runs it
// eagerly, where the compile test is false and the default is made: every module the
// frame calls is then compiled as a graph of its own.
//
// Fix safety: safe. Eagerly the test is unchanged (`not is_torchdynamo_compiling()` is
// true and short-circuits). Under torch.compile, on the paths the rewrite adds, the
// original never ran its traced form: Dynamo ran the frame eagerly, which makes the
// default. The fixed code makes the same default inside the trace. On every other path
// (N given, or a path that accepts None) the test is false as before. The path tests are
// evaluated at the `if` instead of below it: they are attribute reads of `self` and
// literals, with no call and no store in between, so they have the same values there.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <vector>

#include "compile_skipped_default.hpp"
#include "graphmend/rule.hpp"
#include "rules/support/body.hpp"
#include "rules/support/site.hpp"

namespace graphmend::rules {

using syntax::Node;

using body::statements;
using namespace compile_skipped;

namespace {

const RuleInfo kInfo{"GM202", "compile-skipped-default",
                     "a default skipped under torch.compile that the traced code needs, made there too",
                     {.traces_abandoned_frame = true}};

class CompileSkippedDefaultRule final : public Rule {
public:
    [[nodiscard]] const RuleInfo& info() const override { return kInfo; }

    void check(const Context& ctx, std::vector<Site>& out) const override {
        for_each_in_scope(ctx, [&](const Node& n, const Node& def) {
            if (n.is("if_statement")) {
                if (auto s = match(ctx, def, n)) out.push_back(std::move(*s));
            }
            return !n.is("lambda");
        });
    }

private:
    static std::optional<Site> match(const Context& ctx, const Node& def, const Node& stmt) {
        for (const Node& c : stmt.children()) {
            if (c.is("elif_clause") || c.is("else_clause")) return std::nullopt;
        }
        std::vector<Node> operands;
        and_operands(stmt.field("condition"), operands);
        std::string name;
        Node compiling;
        for (const Node& o : operands) {
            if (name.empty()) name = none_test_name(o);
            if (!compiling && compile_test_in(ctx, o)) compiling = o;
        }
        if (name.empty() || !compiling) return std::nullopt;
        bool assigns = false;
        for (const Node& s : statements(stmt.field("consequence"))) {
            const Node a = s.is("expression_statement") && s.named_children().size() == 1 ? s.named_children()[0] : Node{};
            if (a.is("assignment") && a.field("left").is("identifier") && a.field("left").text() == name) assigns = true;
        }
        if (!assigns) return std::nullopt;
        const std::vector<Node> siblings = statements(stmt.parent());
        std::size_t at = 0;
        while (at < siblings.size() && !(siblings[at] == stmt)) ++at;
        const Walk w{ctx, owner_of(def)};
        const Paths paths = raising_paths(w, siblings, at, name);
        if (!paths.always && paths.conditions.empty() && paths.refused.empty()) return std::nullopt;

        Site site = new_site(kInfo, compiling, one_line(fmt::format("{} skipped under torch.compile", name)), "GB0088");
        if (!paths.always && paths.conditions.empty()) {
            site.reason = paths.refused;
            return site;
        }
        const Node test = compile_test_in(ctx, compiling);
        if (!false_when_abandoned(ctx, test)) {
            site.reason = fmt::format(
                "`{}` is not torch's or transformers' compile test: when Dynamo abandons the frame and runs it "
                "eagerly, a wrapper it traces still returns True, so the original may raise there rather than "
                "make the default",
                test.field("function").text());
            return site;
        }
        const std::string added = paths.always ? std::string("True") : fmt::format("{}", fmt::join(paths.conditions, " or "));
        site.fix = Fix{{{compiling.begin(), compiling.end(), fmt::format("({} or {})", compiling.text(), added)}},
                       Applicability::Safe,
                       {}};
        site.detail = fmt::format(
            "traced, `{0}` stays None and its use at line {1} raises, so Dynamo abandons the frame and runs it "
            "eagerly; the default is now made when tracing too, where that use is reached",
            name, paths.line);
        return site;
    }
};

}  // namespace

std::unique_ptr<Rule> make_compile_skipped_default_rule() { return std::make_unique<CompileSkippedDefaultRule>(); }

}  // namespace graphmend::rules

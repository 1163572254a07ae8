// graphmend rules: a rule finds the sites of one kind of graph break in the compiled
// scope, and for each site either attaches a fix (edits plus an applicability) or
// refuses it with a reason a user can act on. Every site is reported.
//
// Adding a rule: `scripts/add_rule.py CODE NAME` makes its folder src/rules/<code>_<name>/,
// its golden-test folder tests/fixtures/<name>/, its page docs/rules/<CODE>.md and its one
// line in src/rules/registry.def. A rule asks the knowledge layer (knowledge.hpp) and the
// analysis (analysis.hpp, values.hpp); it never runs another rule's matcher: it asks the
// file's claims (Claims) what other rules own, and declares in its Policy how its sites weigh
// on other rules' fixes.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis.hpp"
#include "graphmend/edits.hpp"
#include "graphmend/values.hpp"

namespace graphmend::rules {

/// ruff's ordering: a safe fix keeps behaviour and is applied by default; an unsafe fix
/// keeps outputs but not every property and is applied only with --unsafe-fixes.
enum class Applicability { Unsafe, Safe };

struct Fix {
    std::vector<edits::Edit> edits;
    Applicability applicability = Applicability::Safe;
    /// Runtime blocks the emitted code calls (runtime::stem::*, the stems of
    /// src/runtime/*.py in the generated graphmend/runtime_sources.hpp); each is appended
    /// to the file once.
    std::vector<std::string> runtime;
    /// The fix leaves an effect op where the break was and computes nothing else (a deferred
    /// message). Between two graph breaks that stay, with no tensor op between them, that op
    /// would be a graph of its own where the original had none: the driver then refuses the
    /// fix (src/fix/lone_effects.cpp).
    bool effect_only = false;
    /// Where the emitted code removes the break only when a condition holds at run time (a
    /// size limit, autograd not recording, tensors of one layout), and otherwise runs as
    /// written, break and all: that condition, short and in the user's terms ("no autograd,
    /// experts x rows per expert <= 64"). The reports call such a site fixed-when / fixable-when.
    /// Empty: the break is gone for every input.
    std::string condition;
};

struct Site {
    std::string rule;         // the rule's name, e.g. "deferred-side-effect"
    std::string code;         // the rule's code, e.g. "GM101"
    syntax::LineCol where;    // of the site's first byte
    std::uint32_t begin = 0;  // byte range of the site in the original text
    std::uint32_t end = 0;
    std::string what;         // e.g. "print(...)", "logger.warning_once(...)"
    std::string graph_break;  // the Dynamo graph-break id the site causes, e.g. "GB0059"
    std::optional<Fix> fix;   // absent: refused
    std::string detail;       // what the fix does, when it needs more than the rule's summary
    std::string reason;       // why it was refused (empty when fixed)
    /// What the user can change so that graphmend or Dynamo removes the break (a refused
    /// site's `help:` line; one sentence, or empty when the rule has none to give).
    std::string help;
    /// Refused only because of another site inside it (a nested `if`): the driver's next
    /// pass, over the text with that site fixed, may fix it.
    bool retry = false;
};

/// What a rule owns of a file, said before any rule checks it (Rule::claim), so that no rule
/// runs another's matcher: a rule asks the claims whether a span is another rule's.
enum class ClaimKind : std::uint8_t {
    /// The owner reports this span, with everything in it, as (part of) its site, fixed or not.
    Reported,
    /// The owner reports exactly this node (a read, a loop); what is inside it is not claimed.
    ReportedNode,
    /// The owner's fix replaces this span: another rule's fix inside it would be lost.
    Rewritten,
};

/// The claims of one file: byte ranges of the original text (UTF-8 offsets), each with a kind.
class Claims {
public:
    void add(const syntax::Node& n, ClaimKind kind) { add(n.begin(), n.end(), kind); }
    void add(std::uint32_t begin, std::uint32_t end, ClaimKind kind);
    /// Some claim of `kind` holds all of `n` (or is `n`).
    [[nodiscard]] bool covers(const syntax::Node& n, ClaimKind kind) const;
    /// Some claim of `kind` is exactly `n`'s range.
    [[nodiscard]] bool exact(const syntax::Node& n, ClaimKind kind) const;

private:
    struct Span {
        std::uint32_t begin;
        std::uint32_t end;
        ClaimKind kind;
        auto operator<=>(const Span&) const = default;
    };
    std::vector<Span> spans_;  // sorted, no duplicates
};

/// What a rule sees: the project, its value analysis, the index of the file being checked
/// and, while rules check it, every rule's claims on it (empty while rules claim).
struct Context {
    const analysis::Project& project;
    std::size_t file;
    const analysis::Values& values;
    const Claims* claims_of_file = nullptr;
    [[nodiscard]] const analysis::SourceFile& source() const { return project.files()[file]; }
    [[nodiscard]] const Claims& claims() const;
};

/// How the driver weighs a rule's sites against the other sites of a file: the policy between
/// rules, as each rule declares it (src/fix/policy.cpp reads it).
struct Policy {
    /// The rule's sites are breaks on a data-dependent shape or on data read into Python
    /// (Dynamo's unbacked symbols): kept as written, they break in any frame that traces them.
    bool dynamic_shape = false;
    /// The rule's fix makes Dynamo trace a frame it abandoned and ran eagerly (GB0088): the
    /// callees it inlines then run under the trace. Refused while a dynamic-shape site of the
    /// file stays as written, or is fixed only when a run-time condition holds (Fix::condition).
    bool traces_abandoned_frame = false;
    /// A site of the rule inside another site's rewrite is copied there as written and still
    /// breaks: it is refused with `retry`, for the next pass to rewrite inside the new text.
    /// Otherwise such a site counts as fixed, as part of that rewrite.
    bool retried_inside_rewrite = false;
    /// The runtime block (a runtime::stem) whose helpers run the original code, break and all,
    /// where the fix's run-time condition fails (Fix::condition). In a file fixed before, a call
    /// of one is a dynamic-shape site whose break stays there. Empty: none.
    std::string_view fallback_block = {};
};

struct RuleInfo {
    std::string_view code;
    std::string_view name;
    std::string_view summary;
    Policy policy = {};
};

class Rule {
public:
    virtual ~Rule() = default;
    [[nodiscard]] virtual const RuleInfo& info() const = 0;
    /// Adds the spans of the file this rule owns (ClaimKind) to `out`; runs for every rule
    /// before any rule's check. Most rules own nothing beyond their sites' own spans.
    virtual void claim(const Context& /*ctx*/, Claims& /*out*/) const {}
    /// Appends every site of this rule in the file's compiled scope to `out`.
    virtual void check(const Context& ctx, std::vector<Site>& out) const = 0;
};

/// Every rule, in the order they run.
const std::vector<std::unique_ptr<Rule>>& registry();

/// The registered rule with this code, or nullptr.
const RuleInfo* find_rule(std::string_view code);

}  // namespace graphmend::rules

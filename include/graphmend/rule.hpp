// graphmend rules: a rule finds the sites of one kind of graph break in the compiled
// scope, and for each site either attaches a fix (edits plus an applicability) or
// refuses it with a reason a user can act on. Every site is reported.
//
// Adding a rule: one file under src/rules/, one golden-test folder under
// tests/fixtures/<rule name>/, one line in src/rules/registry.cpp.
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
    /// Refused only because of another site inside it (a nested `if`): the driver's next
    /// pass, over the text with that site fixed, may fix it.
    bool retry = false;
};

/// What a rule sees: the project, its value analysis and the index of the file being checked.
struct Context {
    const analysis::Project& project;
    std::size_t file;
    const analysis::Values& values;
    [[nodiscard]] const analysis::SourceFile& source() const { return project.files()[file]; }
};

struct RuleInfo {
    std::string_view code;
    std::string_view name;
    std::string_view summary;
};

class Rule {
public:
    virtual ~Rule() = default;
    [[nodiscard]] virtual const RuleInfo& info() const = 0;
    /// Appends every site of this rule in the file's compiled scope to `out`.
    virtual void check(const Context& ctx, std::vector<Site>& out) const = 0;
};

/// Every rule, in the order they run.
const std::vector<std::unique_ptr<Rule>>& registry();

}  // namespace graphmend::rules

// Counts of sites per status, per code and per project, shared by the report formats.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "graphmend/output.hpp"

namespace graphmend::output {

/// Sites per status (each site counts under exactly one).
struct Counts {
    std::size_t sites = 0, fixed = 0, fixed_when = 0, fixable = 0, fixable_when = 0, refused = 0, unsafe = 0;
    void add(SiteStatus status);
    /// Sites whose fix is in the output (fix) or would be (check, --diff), conditional or not.
    [[nodiscard]] std::size_t applied() const { return fixed + fixed_when + fixable + fixable_when; }
    /// Of those, the ones whose fix removes the break only under a condition.
    [[nodiscard]] std::size_t conditional() const { return fixed_when + fixable_when; }
};

/// "3 fixed" (fix) or "3 fixable" (check, --diff), then ", 1 fixed-when" when any is
/// conditional: the applied sites of `c`, as the human reports count them.
std::string applied_text(const Counts& c, Mode mode);

struct Tally {
    std::size_t files = 0;
    std::size_t errors = 0;     // files with a syntax or internal error
    std::size_t failures = 0;   // files with any error: syntax, internal, or a failed write
    std::size_t rewritten = 0;  // see Results::rewritten
    std::size_t suppressed = 0;  // sites left out by `# noqa`, skip-file or the rule selection
    Counts sites;
    std::map<std::string, Counts> codes;      // by code, sorted
    std::map<std::string, std::string> rules;  // code -> rule name

    void add(const Results& results, std::size_t i);
};

/// One tally per project (sorted by project), and one over all files (read errors count as
/// failures there).
std::map<std::string, Tally> by_project(const Results& results);
Tally total(const Results& results);

/// "1 site" / "2 sites".
std::string plural(std::size_t n, std::string_view noun);

}  // namespace graphmend::output

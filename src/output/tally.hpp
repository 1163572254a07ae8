// Counts of sites per status, per code and per project, shared by the report formats.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "graphmend/output.hpp"

namespace graphmend::output {

struct Counts {
    std::size_t sites = 0, fixed = 0, refused = 0, unsafe = 0;
    void add(SiteStatus status);
};

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

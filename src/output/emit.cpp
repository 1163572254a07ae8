// Where each report goes. See include/graphmend/output.hpp.
#include <fmt/format.h>

#include <cstdio>

#include "graphmend/output.hpp"

namespace graphmend::output {

namespace {

std::string dump(const nlohmann::json& j) {
    // Invalid UTF-8 in a source's text (a site's `what`, an edit) is replaced, not fatal.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string error_line(std::string_view message) { return fmt::format("error: {}\n", message); }

// The error lines a human report carries inline: reads first, then per file its error and
// its failed write.
std::string error_lines(const Results& r) {
    std::string out;
    for (const auto& e : r.read_errors) out += error_line(e);
    for (std::size_t i = 0; i < r.outcomes.size(); ++i) {
        if (r.outcomes[i].error) out += *r.outcomes[i].error + "\n";
        if (!r.write_error(i).empty()) out += error_line(r.write_error(i));
    }
    return out;
}

std::string file_report(const FileOutcome& o, Mode mode, Format format, const Style& style) {
    switch (format) {
    case Format::Concise: return concise_report(o, mode, style);
    case Format::Grouped: return grouped_report(o, mode, style);
    default: return text_report(o, mode, style);
    }
}

std::string human_report(const Results& r, const Emit& e, const Style& style) {
    std::string out;
    for (const auto& err : r.read_errors) out += error_line(err);
    for (std::size_t i = 0; i < r.outcomes.size(); ++i) {
        const FileOutcome& o = r.outcomes[i];
        if (e.statistics) {
            if (o.error) out += *o.error + "\n";  // the table replaces the site lines
        } else if (!e.quiet) {
            out += file_report(o, r.mode, e.format, style);
        } else if (r.mode != Mode::Fix || o.error) {
            out += findings_report(o, r.mode, style);  // -q: what fails the run, no summaries
        }
        if (!r.write_error(i).empty()) out += error_line(r.write_error(i));
    }
    if (e.statistics) out += statistics_report(r, style);
    if (e.show_fixes) out += fixes_report(r, style);
    if (!e.quiet) out += batch_summary(r);
    return out;
}

std::string machine_report(const Results& r, Format format) {
    switch (format) {
    case Format::Sarif: return dump(sarif_report(r));
    case Format::Github: return github_report(r);
    default: return dump(json_report(r));
    }
}

// Writes `text` to `path` ("-" or empty: `fallback`); false after printing the error.
bool deliver(const std::string& path, const std::string& text, std::FILE* fallback) {
    if (path.empty() || path == "-") {
        std::fputs(text.c_str(), fallback);
        std::fflush(fallback);
        return true;
    }
    try {
        write_atomically(path, text);
        return true;
    } catch (const std::exception& ex) {
        std::fputs(error_line(ex.what()).c_str(), stderr);
        return false;
    }
}

}  // namespace

bool emit_reports(const Results& r, const Emit& e) {
    bool ok = true;
    if (is_machine(e.format)) {
        std::fputs(error_lines(r).c_str(), stderr);
        // The human extras asked for go where human reports go.
        const Style style{colour_wanted(stderr)};
        if (e.statistics) std::fputs(statistics_report(r, style).c_str(), stderr);
        if (e.show_fixes) std::fputs(fixes_report(r, style).c_str(), stderr);
        ok = deliver(e.output_file, machine_report(r, e.format), stdout) && ok;
    } else if (e.output_file.empty()) {
        std::fputs(human_report(r, e, Style{colour_wanted(stderr)}).c_str(), stderr);
    } else {
        std::fputs(error_lines(r).c_str(), stderr);
        ok = deliver(e.output_file, human_report(r, e, Style{}), stderr) && ok;
    }
    if (!e.report_json.empty()) ok = deliver(e.report_json, dump(json_report(r)), stdout) && ok;
    return ok;
}

}  // namespace graphmend::output

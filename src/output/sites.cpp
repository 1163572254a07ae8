// What every report says about a site: status, range, message; a run's exit code. See
// include/graphmend/output.hpp.
#include <fmt/format.h>

#include <algorithm>

#include "graphmend/output.hpp"

namespace graphmend::output {

std::string_view site_condition(const FileOutcome& o, std::size_t i) {
    const auto& site = o.sites[i];
    if (!site.fix || site.graph_break.empty()) return {};
    return site.fix->condition;
}

SiteStatus site_status(const FileOutcome& o, std::size_t i, Mode mode) {
    const auto& site = o.sites[i];
    if (o.applied[i]) {
        // Only `fix` writes (or prints) the fixed text; check and --diff would.
        const bool when = !site_condition(o, i).empty();
        if (mode == Mode::Fix) return when ? SiteStatus::FixedWhen : SiteStatus::Fixed;
        return when ? SiteStatus::FixableWhen : SiteStatus::Fixable;
    }
    if (site.fix && site.fix->applicability == rules::Applicability::Unsafe) return SiteStatus::Unsafe;
    return SiteStatus::Refused;  // no fix, or a safe fix left out because the rewrite did not parse
}

std::string_view status_name(SiteStatus status) {
    switch (status) {
    case SiteStatus::Fixed: return "fixed";
    case SiteStatus::FixedWhen: return "fixed-when";
    case SiteStatus::Fixable: return "fixable";
    case SiteStatus::FixableWhen: return "fixable-when";
    case SiteStatus::Unsafe: return "unsafe";
    case SiteStatus::Refused: break;
    }
    return "refused";
}

bool has_fix_applied(SiteStatus status) {
    return status == SiteStatus::Fixed || status == SiteStatus::FixedWhen || status == SiteStatus::Fixable ||
           status == SiteStatus::FixableWhen;
}

Placer::Placer(const std::string& text) : own_(TextLines::of(text)), lines_(&*own_) {}

Placer::Placer(const FileOutcome& outcome)
    : own_(outcome.lines ? std::nullopt : std::optional<TextLines>(TextLines::of(outcome.original))),
      lines_(outcome.lines ? &*outcome.lines : &*own_) {}

std::uint32_t Placer::column(std::uint32_t line, std::uint32_t byte_col) const {
    return lines_->column(line, byte_col);
}

Position Placer::at(std::uint32_t offset) const {
    offset = std::min(offset, lines_->size);
    const auto& starts = lines_->starts;
    const auto it = std::upper_bound(starts.begin(), starts.end(), offset);
    const auto line = static_cast<std::uint32_t>(it - starts.begin());
    return {line, column(line, offset - starts[line - 1] + 1), offset};
}

SiteOrigin site_origin(const FileOutcome& o, std::size_t i) {
    return i < o.origin.size() ? o.origin[i] : SiteOrigin::FirstPass;
}

Range site_range(const FileOutcome& o, std::size_t i, const Placer& placer) {
    const auto& s = o.sites[i];
    if (site_origin(o, i) == SiteOrigin::FoundLater) {
        const Position at{s.where.line, s.where.col, std::nullopt};
        return {at, at};
    }
    const Position start{s.where.line, placer.column(s.where.line, s.where.col), s.begin};
    return {start, placer.at(s.end)};
}

bool own_edits(const FileOutcome& o, std::size_t i) {
    const auto& fix = o.sites[i].fix;
    if (!fix || site_origin(o, i) != SiteOrigin::FirstPass) return false;
    if (!o.applied[i]) return true;  // a fix left out: its edits are as the rule proposed them
    // Applied inside another site's (non-empty) edit: that edit holds its change.
    for (std::size_t j = 0; j < o.sites.size(); ++j) {
        if (j == i || !o.applied[j] || !o.sites[j].fix || site_origin(o, j) != SiteOrigin::FirstPass) continue;
        for (const auto& outer : o.sites[j].fix->edits) {
            const bool inside = std::all_of(fix->edits.begin(), fix->edits.end(), [&](const edits::Edit& e) {
                return outer.begin < outer.end && outer.begin <= e.begin && e.end <= outer.end;
            });
            if (inside) return false;
        }
    }
    return true;
}

std::string site_message(const FileOutcome& o, std::size_t i) {
    const auto& s = o.sites[i];
    const std::string rule_detail = s.rule + (s.detail.empty() ? "" : ": ") + s.detail;
    if (o.applied[i] && s.graph_break.empty()) {
        // A rewrite that keeps behaviour where the original traced (an assert compiled to
        // _assert_async raises RuntimeError): no break to remove.
        return fmt::format("{}: no graph break to remove; keeps the original exception ({})", s.what, rule_detail);
    }
    if (o.applied[i] && !site_condition(o, i).empty()) {
        // Elsewhere the code runs as written, and breaks as before.
        return fmt::format("{}: removes graph break {} only when: {} ({})", s.what, s.graph_break,
                           site_condition(o, i), rule_detail);
    }
    if (o.applied[i]) return fmt::format("{}: removes graph break {} ({})", s.what, s.graph_break, rule_detail);
    // An unsafe fix left out says what applying it would do (its detail).
    const std::string why = !s.reason.empty() ? s.reason
                            : s.fix && s.fix->applicability == rules::Applicability::Unsafe && !s.detail.empty()
                                ? "left as it is; the fix would give " + s.detail
                                : "left as it is";
    return fmt::format("{}: {}", s.what, why);
}

std::string error_message(const FileOutcome& o) {
    if (!o.error) return {};
    for (const std::string& prefix : {fmt::format("{}:{}:{}: ", o.path, o.error_at.line, o.error_at.col),
                                      fmt::format("{}: ", o.path)}) {
        if (o.error->starts_with(prefix)) return o.error->substr(prefix.size());
    }
    return *o.error;
}

std::size_t Results::rewritten() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        n += outcomes[i].changed() && (mode != Mode::Fix || written_at(i)) ? 1 : 0;
    }
    return n;
}

int exit_code(const Results& results, const ExitPolicy& policy) {
    bool finding = false;
    if (!results.read_errors.empty()) return 2;
    for (std::size_t i = 0; i < results.outcomes.size(); ++i) {
        const FileOutcome& o = results.outcomes[i];
        if (!results.write_error(i).empty()) return 2;
        if (o.error && (o.error_kind == FileError::Internal || o.error_kind == FileError::Write)) return 2;
        if (o.error) finding = true;  // a syntax error, as ruff's syntax-error diagnostic
        for (std::size_t s = 0; s < o.sites.size() && results.mode == Mode::Check; ++s) {
            if (has_fix_applied(site_status(o, s, results.mode))) finding = true;
        }
    }
    if (policy.exit_zero) return 0;
    if (results.mode == Mode::Diff && results.rewritten() > 0) finding = true;
    if (results.mode == Mode::Fix && policy.exit_non_zero_on_fix && results.rewritten() > 0) finding = true;
    return finding ? 1 : 0;
}

std::optional<Format> parse_format(std::string_view name) {
    for (std::size_t i = 0; i < std::size(kFormatNames); ++i) {
        if (kFormatNames[i] == name) return static_cast<Format>(i);
    }
    return std::nullopt;
}

}  // namespace graphmend::output

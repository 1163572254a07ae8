// Terminals: colour and the progress line. See include/graphmend/output.hpp.
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "graphmend/output.hpp"
#include "tally.hpp"

namespace graphmend::output {

namespace {

bool set(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0';
}

constexpr std::string_view kEraseLine = "\r\x1b[2K";

}  // namespace

std::string Style::paint(std::string_view text, std::string_view sgr) const {
    if (!colour || text.empty()) return std::string(text);
    return fmt::format("\x1b[{}m{}\x1b[0m", sgr, text);
}

bool colour_wanted(std::FILE* stream) {
    if (set("FORCE_COLOR")) return true;
    if (set("NO_COLOR")) return false;
    return ::isatty(::fileno(stream)) != 0;
}

Progress::Progress(std::FILE* stream, Clock clock, std::chrono::milliseconds delay, std::chrono::milliseconds interval)
    : stream_(stream), clock_(std::move(clock)), start_(clock_()), delay_(delay), interval_(interval) {}

void Progress::update(std::string_view stage, std::size_t done, std::size_t total) {
    const std::lock_guard lock(mutex_);
    const auto now = clock_();
    if (now - start_ < delay_) return;
    if (last_ && now - *last_ < interval_ && done != total) return;
    last_ = now;
    fmt::print(stream_, "{}graphmend: {} {} of {}", kEraseLine, stage, done, plural(total, "file"));
    std::fflush(stream_);
}

void Progress::finish() {
    const std::lock_guard lock(mutex_);
    if (!last_) return;  // nothing was shown
    fmt::print(stream_, "{}", kEraseLine);
    std::fflush(stream_);
    last_.reset();
}

}  // namespace graphmend::output

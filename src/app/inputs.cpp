// Finding and reading a session's inputs: see session.hpp.
#include <sys/stat.h>

#include <filesystem>
#include <istream>
#include <iterator>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include "graphmend/config.hpp"
#include "graphmend/rule.hpp"
#include "graphmend/syntax.hpp"
#include "session.hpp"

namespace graphmend::app {

namespace {

// The runtime form of a file: `auto` is the module for the files of a folder given on the
// command line, and the inline blocks for a file given by itself.
RuntimeForm runtime_form(const Options& opt, bool from_folder) {
    if (opt.runtime == "auto") return from_folder ? RuntimeForm::Module : RuntimeForm::Inline;
    return opt.runtime == "module" ? RuntimeForm::Module : RuntimeForm::Inline;
}

// The files found, in order, each physical file once (as ruff dedupes its paths): a second path
// to the same file (given twice, or through a link to a folder) is warned about and dropped, so
// the first path decides how the file is taken (named by itself, or found in a folder).
void keep_once_each(config::Discovered& found) {
    std::map<std::pair<dev_t, ino_t>, std::string> seen;
    std::vector<std::string> files;
    std::vector<bool> named;
    for (std::size_t k = 0; k < found.files.size(); ++k) {
        std::string& f = found.files[k];
        struct stat st {};
        if (::stat(f.c_str(), &st) == 0) {
            const auto [it, fresh] = seen.emplace(std::pair{st.st_dev, st.st_ino}, f);
            if (!fresh) {
                found.warnings.push_back(fmt::format("{}: the same file as {}; checked once", f, it->second));
                continue;
            }
        }
        files.push_back(std::move(f));
        named.push_back(found.named[k]);
    }
    found.files = std::move(files);
    found.named = std::move(named);
}

// Independent groups joined, in order, into batches of at least kBatchBytes of source (fixing
// groups together gives each the outcomes it gets alone: independent_groups): one analysis
// per batch instead of one per small group (a Hub checkout is two files), and trees of a few
// megabytes of source held at a time.
constexpr std::uintmax_t kBatchBytes = 4u << 20;

}  // namespace

namespace {

// The lines of file `path` that PATH:LINE entries (--hold-site's PATH:LINE:CODE with
// `with_code`, --scope-root's PATH:LINE) name, with their codes ("" without).
std::vector<std::pair<std::uint32_t, std::string>> lines_named(const std::vector<std::string>& entries,
                                                                const std::string& path, bool with_code) {
    std::vector<std::pair<std::uint32_t, std::string>> out;
    if (entries.empty()) return out;
    std::error_code ec;
    const auto file = std::filesystem::weakly_canonical(path, ec);
    for (const std::string& h : entries) {
        const std::size_t code_at = with_code ? h.rfind(':') : h.size();
        if (code_at == std::string::npos || code_at == 0) continue;
        const std::size_t line_at = h.rfind(':', code_at - 1);
        if (line_at == std::string::npos) continue;
        if (std::filesystem::weakly_canonical(h.substr(0, line_at), ec) != file) continue;
        const auto line = syntax::parse_int(std::string_view(h).substr(line_at + 1, code_at - line_at - 1));
        if (line && *line > 0) {
            out.emplace_back(static_cast<std::uint32_t>(*line), with_code ? h.substr(code_at + 1) : std::string());
        }
    }
    return out;
}

// `settings` with the sites --hold-site names in file `path` (PATH:LINE:CODE; fix --verify
// reverted them) held back, the lines --scope-root names (PATH:LINE; verify passes the frames
// Dynamo traced) as entry points of the compiled scope, and the lines --data-test and
// --data-read name as Dynamo's data-dependent branches and scalar reads (--data-operator: its
// data-dependent operators). Null settings select every rule.
std::shared_ptr<const FileSettings> with_sites_told(const Options& opt, const std::string& path,
                                                    std::shared_ptr<const FileSettings> settings) {
    auto held = lines_named(opt.held_sites, path, true);
    const auto roots = lines_named(opt.scope_roots, path, false);
    const auto tests = lines_named(opt.data_tests, path, false);
    const auto reads = lines_named(opt.data_reads, path, false);
    const auto operators = lines_named(opt.data_operators, path, false);
    if (held.empty() && roots.empty() && tests.empty() && reads.empty() && operators.empty()) return settings;
    auto out = std::make_shared<FileSettings>();
    if (settings) {
        *out = *settings;
    } else {
        for (const auto& rule : rules::registry()) out->selected.emplace_back(rule->info().code);
    }
    if (!held.empty()) {
        out->held = std::move(held);
        out->held_reason = "reverted by `fix --verify`: the fix was not proven (see its report)";
    }
    for (const auto& root : roots) out->scope_roots.push_back(root.first);
    for (const auto& test : tests) out->data_tests.push_back(test.first);
    for (const auto& read : reads) out->data_reads.push_back(read.first);
    for (const auto& op : operators) out->data_operators.push_back(op.first);
    return out;
}

}  // namespace

std::vector<Pending> find_inputs(const Options& opt, std::istream& in, std::vector<std::string>& errors) {
    config::Resolver resolver(config::overrides(opt.config, opt.unsafe_fixes));
    if (opt.from_stdin()) {
        // As ruff: --stdin-filename names the file for the configuration, the project and the report.
        const std::string path = opt.stdin_filename.empty() ? "-" : opt.stdin_filename;
        std::vector<Pending> out{{path, resolver.for_file(path), RuntimeForm::Inline,
                                  std::string(std::istreambuf_iterator<char>(in), {})}};
        warn(opt, resolver.take_warnings());
        return out;
    }
    config::Discovered found = config::discover(opt.paths, resolver);
    for (auto& e : found.errors) errors.push_back(std::move(e));
    keep_once_each(found);
    warn(opt, found.warnings);
    std::vector<Pending> out;
    for (std::size_t k = 0; k < found.files.size(); ++k) {
        std::string& f = found.files[k];
        // A file named on the command line keeps the inline runtime (auto); one found in a folder
        // imports it, however a second path to it is spelled. A file reached through a symbolic
        // link (an HF cache snapshot) keeps it too: its text lives elsewhere (blobs/), where a
        // module written next to the link would not be found.
        std::error_code ec;
        const RuntimeForm form = runtime_form(opt, !found.named[k] && !std::filesystem::is_symlink(f, ec));
        auto settings = with_sites_told(opt, f, resolver.for_file(f));
        out.push_back({std::move(f), std::move(settings), form, std::nullopt});
    }
    warn(opt, resolver.take_warnings());
    return out;
}

std::vector<InputFile> read_inputs(const Options& opt, std::vector<Pending>& pending,
                                   const std::vector<std::size_t>& group, std::vector<std::string>& errors) {
    std::vector<InputFile> inputs;
    for (const std::size_t k : group) {
        Pending& p = pending[k];
        if (p.text) {
            inputs.push_back({p.path, std::move(*p.text), p.settings, p.runtime});
        } else if (!opt.output.empty()) {
            try {
                inputs.push_back({p.path, syntax::read_file(p.path), p.settings, p.runtime});
            } catch (const std::exception& e) {
                errors.push_back(e.what());
            }
        } else {
            inputs.push_back({p.path, std::string(), p.settings, p.runtime, true});
        }
    }
    return inputs;
}

void take_read_errors(std::vector<FileOutcome>& outcomes, std::vector<std::string>& errors) {
    std::erase_if(outcomes, [&](FileOutcome& o) {
        if (!o.error || o.error_kind != FileError::Read) return false;
        errors.push_back(std::move(*o.error));
        return true;
    });
}

std::vector<std::vector<std::size_t>> in_batches(const std::vector<std::vector<std::size_t>>& groups,
                                                 const std::vector<std::string>& paths) {
    std::vector<std::vector<std::size_t>> out;
    std::uintmax_t bytes = kBatchBytes;  // the first group starts a batch
    for (const auto& group : groups) {
        if (bytes >= kBatchBytes) {
            out.emplace_back();
            bytes = 0;
        }
        for (const std::size_t i : group) {
            std::error_code ec;
            const std::uintmax_t size = std::filesystem::file_size(paths[i], ec);
            bytes += ec ? 0 : size;
            out.back().push_back(i);
        }
    }
    return out;
}

}  // namespace graphmend::app

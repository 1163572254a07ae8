"""Configuration, suppression comments and file discovery, through build/graphmend on small
temporary trees (no torch needed: graphmend's reports and the files it writes)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import BINARY, REPO, require_graphmend  # noqa: E402

# GM101 (the print) and GM201 (the data-dependent `if` with tensor branches).
MODEL = """\
import torch


class M(torch.nn.Module):
    def forward(self, x):
        print(x){print_comment}
        if x.sum() > 0:{if_comment}
            y = x + 1
        else:
            y = x - 1
        return y
"""


def model(print_comment="", if_comment=""):
    return MODEL.format(print_comment=print_comment, if_comment=if_comment)


def write(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def git_init(root):
    """An empty git repository (what `git init` leaves, as far as graphmend's libgit2 reads)."""
    for d in ("objects", "refs/heads", "info"):
        (root / ".git" / d).mkdir(parents=True, exist_ok=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")


def graphmend(cwd, *args):
    """Runs build/graphmend ARGS in cwd with --report-json; returns (exit code, stderr, report)."""
    require_graphmend()
    report = cwd / "report.json"
    report.unlink(missing_ok=True)
    cmd, *rest = args
    # `check` exits 1 on a fixable site (tests/python/test_output_formats.py): these tests are about
    # what is reported, so they ask for 0 (a usage or configuration error still exits 2).
    exit_zero = ["--exit-zero"] if cmd == "check" else []
    proc = subprocess.run([str(BINARY), cmd, *exit_zero, "--report-json", str(report), *rest], cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stderr, json.loads(report.read_text()) if report.exists() else None


def codes(report):
    """{path: [code, ...]} of the sites reported."""
    return {f["path"]: [s["code"] for s in f["sites"]] for f in report["files"]}


def test_nearest_config_wins_and_pyproject_without_section_is_skipped(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.graphmend]\nselect = ["GM1"]\n',
        "a/pyproject.toml": '[project]\nname = "a"\n',
        "a/m.py": model(),
        "b/graphmend.toml": 'select = ["GM2"]\n',
        "b/m.py": model(),
        "c/.graphmend.toml": 'ignore = ["GM101"]\n',
        "c/graphmend.toml": 'select = ["GM1"]\n',
        "c/m.py": model(),
    })
    rc, err, report = graphmend(tmp_path, "check", ".")
    assert rc == 0, err
    assert codes(report) == {"./a/m.py": ["GM101"], "./b/m.py": ["GM201"], "./c/m.py": ["GM201"]}


def test_noqa_on_a_fixable_site_leaves_it_unrewritten_and_unreported(tmp_path):
    text = model(print_comment="  # noqa: GM101")
    write(tmp_path, {"m.py": text})
    rc, err, report = graphmend(tmp_path, "fix", "m.py")
    assert rc == 0, err
    assert codes(report) == {"m.py": ["GM201"]}
    assert "m.py: 1 site found, 1 fixed, 0 refused, 1 suppressed" in err
    fixed = (tmp_path / "m.py").read_text()
    assert "        print(x)  # noqa: GM101\n" in fixed
    assert "if x.sum() > 0:" not in fixed  # GM201 was rewritten


def test_bare_noqa_suppresses_every_code_and_other_codes_none(tmp_path):
    write(tmp_path, {"a.py": model(if_comment="  # NOQA"), "b.py": model(print_comment="  # noqa: E501")})
    rc, err, report = graphmend(tmp_path, "check", "a.py", "b.py")
    assert rc == 0, err
    assert codes(report) == {"a.py": ["GM101"], "b.py": ["GM101", "GM201"]}


def test_noqa_inside_a_string_is_no_comment(tmp_path):
    text = model().replace("print(x)", 'print(x, "# noqa")')
    write(tmp_path, {"m.py": text})
    rc, err, report = graphmend(tmp_path, "check", "m.py")
    assert codes(report) == {"m.py": ["GM101", "GM201"]}


def test_per_file_ignores(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.graphmend.per-file-ignores]\n"tests/*" = ["GM2"]\n"legacy_*.py" = ["GM"]\n',
        "tests/m.py": model(),
        "src/m.py": model(),
        "src/deep/legacy_m.py": model(),
    })
    rc, err, report = graphmend(tmp_path, "check", ".")
    assert rc == 0, err
    assert codes(report) == {"./src/deep/legacy_m.py": [], "./src/m.py": ["GM101", "GM201"], "./tests/m.py": ["GM101"]}


def test_skip_file_is_left_alone_but_still_part_of_the_project(tmp_path):
    base = "# graphmend: skip-file\nimport torch\n\n\nclass Base(torch.nn.Module):\n    pass\n"
    user = model().replace("import torch\n", "import torch\nfrom .base import Base\n").replace(
        "class M(torch.nn.Module)", "class M(Base)")
    write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": base + model(), "pkg/user.py": user})
    rc, err, report = graphmend(tmp_path, "fix", "pkg")
    assert rc == 0, err
    assert (tmp_path / "pkg/base.py").read_text() == base + model()
    # M's base class is an nn.Module found in the skipped file: its forward is in scope.
    assert codes(report)["pkg/user.py"] == ["GM101", "GM201"]
    assert codes(report)["pkg/base.py"] == []


def test_gitignored_and_virtualenv_folders_are_not_walked(tmp_path):
    git_init(tmp_path)
    write(tmp_path, {
        ".gitignore": "generated/\n*_tmp.py\n!keep_tmp.py\n",
        "m.py": model(),
        "generated/g.py": model(),
        "scratch_tmp.py": model(),
        "keep_tmp.py": model(),
        "venv/lib/v.py": model(),
        ".venv/lib/v.py": model(),
        "build/b.py": model(),
        "site-packages/s.py": model(),
    })
    rc, err, report = graphmend(tmp_path, "check", ".")
    assert rc == 0, err
    assert sorted(codes(report)) == ["./keep_tmp.py", "./m.py"]
    rc, err, report = graphmend(tmp_path, "check", "--no-respect-gitignore", ".")
    assert sorted(codes(report)) == ["./generated/g.py", "./keep_tmp.py", "./m.py", "./scratch_tmp.py"]
    # A path given is never excluded.
    rc, err, report = graphmend(tmp_path, "check", "generated", "venv/lib/v.py")
    assert sorted(codes(report)) == ["generated/g.py", "venv/lib/v.py"]


def test_symlinked_files_of_a_huggingface_snapshot_are_found(tmp_path):
    hub = tmp_path / "hub/models--org--tiny"
    write(hub, {"blobs/9f86d081": model(), "blobs/2c26b46b": "from .modeling_tiny import M\n"})
    snapshot = hub / "snapshots/0123abcd"
    snapshot.mkdir(parents=True)
    os.symlink("../../blobs/9f86d081", snapshot / "modeling_tiny.py")
    os.symlink("../../blobs/2c26b46b", snapshot / "__init__.py")
    os.symlink("..", snapshot / "loop")
    rc, err, report = graphmend(tmp_path, "check", "hub")
    assert rc == 0, err
    prefix = "hub/models--org--tiny/snapshots/0123abcd/"
    assert codes(report) == {prefix + "__init__.py": [], prefix + "modeling_tiny.py": ["GM101", "GM201"]}
    assert f"warning: {prefix}loop: symbolic link loop" in err


def test_select_and_ignore_flags_override_the_config(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.graphmend]\nselect = ["GM1"]\n', "m.py": model()})
    assert codes(graphmend(tmp_path, "check", "m.py")[2]) == {"m.py": ["GM101"]}
    assert codes(graphmend(tmp_path, "check", "--select", "GM2", "m.py")[2]) == {"m.py": ["GM201"]}
    assert codes(graphmend(tmp_path, "check", "--extend-select", "GM201", "m.py")[2]) == {"m.py": ["GM101", "GM201"]}
    assert codes(graphmend(tmp_path, "check", "--select", "ALL", "--ignore", "GM101,GM4", "m.py")[2]) == {
        "m.py": ["GM201"]}
    assert codes(graphmend(tmp_path, "check", "--isolated", "m.py")[2]) == {"m.py": ["GM101", "GM201"]}
    rc, err, _ = graphmend(tmp_path, "check", "--select", "GM0", "m.py")
    assert rc == 2 and "unknown rule selector `GM0`" in err


@pytest.mark.parametrize("flags, expected", [
    (["--select", "GM1"], ["GM101"]),
    (["--select=GM1"], ["GM101"]),
    (["--ignore", "GM2"], ["GM101"]),
    (["--ignore=GM2"], ["GM101"]),
    (["--extend-select", "GM201", "--select", "GM101"], ["GM101", "GM201"]),
    (["--select", "GM2", "--extend-select=GM1"], ["GM101", "GM201"]),
    (["--select", "GM1", "--select=GM201"], ["GM101", "GM201"]),  # occurrences accumulate
    (["--select", "GM1,GM2", "--ignore", "GM101", "--ignore=GM4"], ["GM201"]),
])
def test_a_list_flag_takes_one_value_and_leaves_the_paths_after_it(tmp_path, flags, expected):
    """ruff's list options: one comma-separated value per occurrence. Every path after the flag is
    an input (a pre-commit hook's `args: [--ignore=GM4]` comes before the staged files)."""
    write(tmp_path, {"a.py": model(), "b.py": model()})
    rc, err, report = graphmend(tmp_path, "check", *flags, "a.py", "b.py")
    assert rc == 0, err
    assert codes(report) == {"a.py": expected, "b.py": expected}


@pytest.mark.parametrize("form", [["--extend-exclude", "zz*"], ["--extend-exclude=zz*"]])
def test_extend_exclude_takes_one_glob_and_fixes_every_path_after_it(tmp_path, form):
    write(tmp_path, {"a.py": model(), "b.py": model()})
    rc, err, report = graphmend(tmp_path, "fix", *form, "a.py", "b.py")
    assert rc == 0, err
    assert [f["path"] for f in report["files"] if f["written"]] == ["a.py", "b.py"]
    assert "_graphmend_" in (tmp_path / "a.py").read_text()


def test_extend_exclude_occurrences_accumulate(tmp_path):
    write(tmp_path, {"keep.py": model(), "gen_x.py": model(), "old/m.py": model()})
    rc, err, report = graphmend(tmp_path, "check", "--extend-exclude", "gen_*.py", "--extend-exclude=old", ".")
    assert rc == 0, err
    assert list(codes(report)) == ["./keep.py"]


def test_config_flag_uses_one_file_for_every_input(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.graphmend]\nselect = ["GM1"]\n',
        "conf/only.toml": 'select = ["GM2"]\nextend-exclude = ["skipped"]\n',
        "m.py": model(),
        "skipped/s.py": model(),
    })
    rc, err, report = graphmend(tmp_path, "check", "--config", "conf/only.toml", ".")
    assert rc == 0, err
    assert codes(report) == {"./m.py": ["GM201"]}  # globs relative to the working folder


def test_a_malformed_config_says_where_and_exits_2(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.graphmend]\nselect = ["GM1",\n  3]\n', "m.py": model()})
    rc, err, _ = graphmend(tmp_path, "check", "m.py")
    assert rc == 2
    assert f"error: {tmp_path / 'pyproject.toml'}:3:3: `select` must be a list of strings" in err


def test_unknown_keys_and_another_torch_are_warnings(tmp_path):
    write(tmp_path, {"graphmend.toml": 'selekt = ["GM1"]\ntarget-torch = "2.4"\n', "m.py": model()})
    rc, err, report = graphmend(tmp_path, "check", "m.py")
    assert rc == 0, err
    assert f"warning: {tmp_path / 'graphmend.toml'}:1:1: unknown key `selekt`; ignored" in err
    assert "target-torch = \"2.4\": graphmend's rules encode the behaviour of torch 2.12" in err
    assert codes(report) == {"m.py": ["GM101", "GM201"]}


def test_a_folder_without_python_files_is_a_warning_not_an_error(tmp_path):
    write(tmp_path, {"docs/readme.md": "text\n", "m.py": model()})
    rc, err, _ = graphmend(tmp_path, "check", "docs", "m.py")
    assert rc == 0, err
    assert "warning: docs: no Python files found" in err


def test_unsafe_fixes_in_the_config_and_the_flags_over_it(tmp_path):
    # GM201's state form (a buffer rebound under a data test) is an unsafe fix.
    original = (REPO / "tests/fixtures/predicated-control-flow/state_unsafe.py").read_text()
    write(tmp_path, {"graphmend.toml": "unsafe-fixes = true\n", "m.py": original})
    rc, err, _ = graphmend(tmp_path, "fix", "--no-unsafe-fixes", "m.py")
    assert rc == 0, err
    assert (tmp_path / "m.py").read_text() == original
    rc, err, _ = graphmend(tmp_path, "fix", "m.py")
    assert rc == 0, err
    assert (tmp_path / "m.py").read_text() != original
    rc, err, _ = graphmend(tmp_path, "check", "--unsafe-fixes", "--no-unsafe-fixes", "m.py")
    assert rc == 2  # the two flags exclude each other


def test_stdin_filename_places_stdin_for_configuration_and_reports(tmp_path):
    """ruff's --stdin-filename: per-file-ignores match the name given to stdin's text."""
    require_graphmend()
    write(tmp_path, {"pyproject.toml": '[tool.graphmend.per-file-ignores]\n"tests/*" = ["GM101"]\n'})
    text = model()

    def run(name):
        return subprocess.run([str(BINARY), "check", "--stdin-filename", name, "-"], input=text, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    ignored, checked = run("tests/m.py"), run("src/m.py")
    assert ignored.returncode == 1, ignored.stderr  # GM201 still fixable
    assert "tests/m.py: 1 site found, 1 fixable, 0 refused, 1 suppressed" in ignored.stderr
    assert "src/m.py:" in checked.stderr and "GM101" in checked.stderr and "GM101" not in ignored.stderr
    misuse = subprocess.run([str(BINARY), "check", "--stdin-filename", "a.py", "m.py"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert misuse.returncode == 2

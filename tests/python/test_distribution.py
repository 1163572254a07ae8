"""Distribution files checked without building: .pre-commit-hooks.yaml against pre-commit's own
schema, and the README's pre-commit and GitHub Actions snippets (section "Install")."""
import re
import subprocess

import pytest
import yaml
from pre_commit.clientlib import load_config, load_manifest

from conftest import BINARY, REPO, require_graphmend

MANIFEST = REPO / ".pre-commit-hooks.yaml"
HOOKS = {"graphmend-check": "check", "graphmend-fix": "fix"}


def readme_yaml_blocks():
    """Every ```yaml block of README.md, parsed."""
    text = (REPO / "README.md").read_text()
    return [(block, yaml.safe_load(block)) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def readme_block(key):
    blocks = [(text, data) for text, data in readme_yaml_blocks() if isinstance(data, dict) and key in data]
    assert len(blocks) == 1, f"README.md: one yaml block with '{key}:' expected, found {len(blocks)}"
    return blocks[0]


def test_manifest_is_valid_for_pre_commit():
    hooks = {hook["id"]: hook for hook in load_manifest(str(MANIFEST))}  # raises when invalid
    assert set(hooks) == set(HOOKS)
    for hook_id, subcommand in HOOKS.items():
        hook = hooks[hook_id]
        assert hook["entry"] == f"graphmend {subcommand}"
        assert hook["language"] == "python", "pre-commit pip-installs the repository: graphmend on PATH"
        assert hook["types"] == ["python"]
        assert hook["require_serial"] is True, "graphmend analyses the files it is given together"


@pytest.mark.parametrize("subcommand", sorted(set(HOOKS.values())))
def test_manifest_entries_are_graphmend_subcommands(subcommand):
    require_graphmend()
    proc = subprocess.run([str(BINARY), subcommand, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert subcommand in proc.stdout


def test_readme_pre_commit_config_is_valid(tmp_path):
    text, data = readme_block("repos")
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(text)
    load_config(str(config))  # raises when invalid
    (repo,) = data["repos"]
    used = {hook["id"] for hook in repo["hooks"]}
    assert used and used <= set(HOOKS)
    commented = set(re.findall(r"#\s*- id: (\S+)", text))
    assert commented <= set(HOOKS), "the README's commented-out hook ids exist too"


def test_readme_ci_job_installs_and_checks():
    _, data = readme_block("jobs")
    (job,) = data["jobs"].values()
    steps = job["steps"]
    uses = [step.get("uses", "") for step in steps]
    assert any(u.startswith("actions/checkout@") for u in uses)
    assert any(u.startswith("actions/setup-python@") for u in uses)
    runs = [step["run"] for step in steps if "run" in step]
    assert any(re.match(r"pip install \"graphmend @ git\+https://", run) for run in runs)
    assert runs[-1] == "graphmend check --output-format github ."

"""benchmarks/tool_speed.py: argument parsing, file collection, the split of the files between
worker processes, and the arithmetic of the report. No timing is asserted: the measurements
are replaced by fixed numbers, so nothing here depends on how fast the machine is."""
import argparse
import json

import pytest

import tool_speed


def test_defaults():
    args = tool_speed.parse_args([])
    assert args.binary == tool_speed.REPO / "build" / "graphmend"
    assert args.reps == 5
    assert args.threads == [1, 2]
    assert args.arms == ["graphmend", "ast", "libcst"]
    assert args.json is None and args.package is None and args.worker is None
    assert args.notes == ""


def test_options(tmp_path):
    args = tool_speed.parse_args(["--binary", "/x/gm", "--reps", "3", "--threads", "2,1,2", "--arms", "libcst,ast",
                                  "--json", str(tmp_path / "o.json"), "--package", str(tmp_path),
                                  "--notes", "shared machine"])
    assert str(args.binary) == "/x/gm"
    assert args.reps == 3
    assert args.threads == [1, 2]
    assert args.arms == ["ast", "libcst"]  # in the canonical order
    assert args.json == tmp_path / "o.json"
    assert args.notes == "shared machine"


@pytest.mark.parametrize("argv", [["--reps", "0"], ["--threads", "0"], ["--threads", "a"], ["--threads", ""],
                                  ["--arms", "ruff"], ["--arms", ""]])
def test_bad_options_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        tool_speed.parse_args(argv)
    assert e.value.code == 2


def test_collects_like_graphmend(tmp_path):
    for rel in ["b.py", "a/z.py", "a/y.txt", "a/__pycache__/c.py", ".hidden/d.py", "a/.e.py", "a/b/c.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "b.py")
    got = [p[len(str(tmp_path)) + 1:] for p in tool_speed.collect_python_files(tmp_path)]
    # graphmend skips hidden folders but not hidden files, and symlinks; sorted by full path.
    assert got == ["a/.e.py", "a/b/c.py", "a/z.py", "b.py"]


def test_split_by_bytes_balances_and_covers_every_file():
    sizes = [10, 1, 7, 3, 3, 8, 2]
    shares = tool_speed.split_by_bytes(sizes, 2)
    assert sorted(i for s in shares for i in s) == list(range(len(sizes)))
    loads = [sum(sizes[i] for i in s) for s in shares]
    assert abs(loads[0] - loads[1]) <= max(sizes)
    assert loads == [17, 17]
    assert all(s == sorted(s) for s in shares)
    assert tool_speed.split_by_bytes(sizes, 1) == [list(range(len(sizes)))]
    assert tool_speed.split_by_bytes([5], 3) == [[0], [], []]


def test_summarise():
    s = tool_speed.summarise([4.0, 2.0, 3.0, 10.0, 3.0])
    assert s == {"median": 3.0, "min": 2.0, "max": 10.0, "spread_pct": pytest.approx(800 / 3), "n": 5}
    assert tool_speed.summarise([2.0, 4.0])["median"] == 3.0
    with pytest.raises(ValueError):
        tool_speed.summarise([])


def test_throughput():
    assert tool_speed.throughput(100, 5_000_000, 2.0) == {"files_per_s": 50.0, "mb_per_s": 2.5}
    with pytest.raises(ValueError):
        tool_speed.throughput(1, 1, 0.0)


def test_schedule_runs_every_cell_once_per_rep_in_rotating_order():
    plan = tool_speed.schedule(["graphmend", "ast"], [1, 2], 3)
    assert len(plan) == 12
    for rep in range(3):
        cells = [(a, t) for r, a, t in plan if r == rep]
        assert sorted(cells) == sorted([("graphmend", 1), ("ast", 1), ("graphmend", 2), ("ast", 2)])
    firsts = [next((a, t) for r, a, t in plan if r == rep) for rep in range(3)]
    assert firsts == [("graphmend", 1), ("ast", 1), ("graphmend", 2)]


def fake_samples(walls, rss_kb):
    # CPU time: the wall time (one busy core), for the arithmetic only.
    return [{"wall_s": w, "cpu_s": w, "peak_rss_kb": m, "rep": i} for i, (w, m) in enumerate(zip(walls, rss_kb))]


def fake_rows():
    files, total = 10, 20_000_000
    return [
        tool_speed.result_row("graphmend", 1, fake_samples([2.0, 4.0, 3.0], [1024 * 100] * 3), files, total),
        tool_speed.result_row("ast", 1, fake_samples([6.0, 6.0, 9.0], [1024 * 50] * 3), files, total),
        tool_speed.result_row("graphmend", 2, fake_samples([1.5, 2.0, 1.0], [1024 * 110] * 3), files, total),
        tool_speed.result_row("ast", 2, fake_samples([3.0, 4.0, 5.0], [1024 * 100] * 3), files, total),
    ]


def test_result_row():
    row = fake_rows()[0]
    assert row["processes"] == 1
    assert row["wall_s"]["median"] == 3.0
    assert row["files_per_s"] == {"median": pytest.approx(10 / 3), "min": 2.5, "max": 5.0}
    assert row["mb_per_s"]["median"] == pytest.approx(20 / 3)
    assert row["peak_rss_mb"]["median"] == 100.0
    assert row["cpu_s"]["median"] == 3.0
    assert fake_rows()[3]["processes"] == 2  # python arms: one process per thread


def test_ratios_and_scaling():
    rows = fake_rows()
    rs = tool_speed.ratios(rows, 3)
    assert [(r["threads"], r["other"]) for r in rs] == [(1, "ast"), (2, "ast")]
    one = rs[0]
    assert one["speed"]["median"] == pytest.approx(6.0 / 3.0)  # graphmend twice as fast
    assert one["speed"]["per_rep"]["median"] == pytest.approx(3.0)  # reps: 6/2, 6/4, 9/3
    assert one["speed"]["per_rep"]["min"] == pytest.approx(1.5)
    assert one["speed"]["per_rep"]["max"] == pytest.approx(3.0)
    assert one["peak_rss"]["median"] == pytest.approx(2.0)
    assert one["cpu_efficiency"]["median"] == pytest.approx(2.0)
    assert one["cpu_efficiency"]["per_rep"]["max"] == pytest.approx(3.0)
    assert rs[1]["speed"]["median"] == pytest.approx(4.0 / 1.5)
    sc = tool_speed.scaling(rows)
    assert sc["graphmend"] == {"1": 1.0, "2": pytest.approx(2.0)}
    assert sc["ast"]["2"] == pytest.approx(1.5)


def test_table_and_json_round_trip():
    rows = fake_rows()
    result = {"package": {"files": 10, "mb": 20.0}, "reps": 3, "results": rows,
              "ratios": tool_speed.ratios(rows, 3), "scaling": tool_speed.scaling(rows)}
    text = tool_speed.table(result)
    assert "graphmend    1" in text and "vs ast" in text
    assert json.loads(json.dumps(result)) == result


def test_worker_counts_files(tmp_path, capsys):
    good = tmp_path / "good.py"
    good.write_text("def f(x):\n    return x\n")
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    lst = tmp_path / "list.txt"
    lst.write_text(f"{good}\n{bad}\n")
    tool_speed.worker("ast", str(lst))
    report = json.loads(capsys.readouterr().out)
    assert report["files"] == 2 and report["failed"] == 1

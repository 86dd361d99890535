"""`python -m judge_rl.report` and the sweeps: every sweep in sweeps/ runs in smoke mode (`debug=tiny`), and
the report's cells are checked one by one against the run directories, failed points included."""

from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

import pytest
import yaml

from judge_rl.jobs.train import run
from judge_rl.report import build_table, format_cell, main as report_main, to_markdown, write_report
from judge_rl.reports.paper import load_paper_table
from judge_rl.reports.schema import DEFAULT_REPORT_COLUMNS, SCHEMA, read_run, title
from judge_rl.rundir import read_status

from conftest import REPO_ROOT, compose_config
from test_cli import finish, judge_rl

# sweeps of the policy job (`python -m judge_rl.policy`) are tested with it (tests/jobs/test_policy.py)
# sweeps of the policy job say so in a comment line (tests/policy/ runs them with the policy job)
POLICY_SWEEPS = {p.stem for p in (REPO_ROOT / "sweeps").glob("*.yaml") if "\n# job: judge_rl.policy" in p.read_text()}
SWEEPS = sorted(p.stem for p in (REPO_ROOT / "sweeps").glob("*.yaml") if p.stem not in POLICY_SWEEPS)
# methods that need a judge which already writes the verdict format (the tiny random model never does): they
# fail in one line, and the report shows them as failed rows (tests/recipes/test_methods.py)
TINY_FAILS = {"algorithm=sft_cot": "nothing to keep", "algorithm=dpo_critic": "no pair kept"}


def sweep_points(name: str) -> list[list[str]]:
    """The grid of a sweep file's `hydra.sweeper.params`, one override list per point (Hydra's order)."""
    params = yaml.safe_load((REPO_ROOT / "sweeps" / f"{name}.yaml").read_text())["hydra"]["sweeper"]["params"]
    axes = [[f"{k}={v}" for v in str(values).split(",")] for k, values in params.items()]
    return [list(point) for point in itertools.product(*axes)]


def run_point(point_dir: Path, overrides: list[str]) -> dict:
    """One sweep point the way Hydra's launcher runs it: its overrides saved in .hydra/, then the job."""
    (point_dir / ".hydra").mkdir(parents=True)
    (point_dir / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    return run(compose_config([*overrides, f"run_dir={point_dir}"]))


def check_report_against_run_dirs(sweep_dir: Path, columns: list[str]) -> None:
    """Every cell of report.md and report.csv is the value the point's results.json holds (or '-')."""
    table = build_table([sweep_dir], columns)
    md = (sweep_dir / "report.md").read_text().splitlines()
    rows_md = [line.strip("|").split(" | ") for line in md[2 : 2 + len(table.rows)]]
    with (sweep_dir / "report.csv").open() as f:
        rows_csv = list(csv.DictReader(f))
    assert len(rows_md) == len(rows_csv) == len(table.rows) > 0
    for row, cells_md, cells_csv in zip(table.rows, rows_md, rows_csv):
        record = read_run(row.run_dir)
        assert cells_md[1].strip().startswith(record.status) and cells_csv["status"] == record.status
        results = json.loads((row.run_dir / "results.json").read_text()) if (row.run_dir / "results.json").exists() else None
        for j, column in enumerate(columns):
            value = record.cells.get(column)
            expected = format_cell(value, record.cells.get(f"{column}_ci"), column)
            assert cells_md[2 + j].strip() == expected, (row.label, column)
            missing = value is None or (isinstance(value, float) and math.isnan(value))
            assert cells_csv[column] == ("" if missing else str(value)), (row.label, column)
        if results is not None:  # the cells are the documented paths into results.json
            stage, name, metric = "rl", "held_out", "consistent_accuracy"
            if "rl" in results["evaluations"] and f"{stage}/{name}/{metric}" in columns:
                assert record.cells[f"{stage}/{name}/{metric}"] == results["evaluations"][stage][name]["metrics"][metric]
            final = results.get("final_stage")
            if final in results["evaluations"] and f"judge/{name}/{metric}" in columns:
                expected_value = results["evaluations"][final][name]["metrics"].get(metric)
                assert record.cells.get(f"judge/{name}/{metric}") == expected_value


# peak memory: 6.4 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
@pytest.mark.parametrize("name", [s for s in SWEEPS if s != "thinkj_table9"])
def test_every_sweep_runs_in_smoke_mode_and_its_report_matches_the_run_dirs(tmp_path, name):
    sweep_dir = tmp_path / name
    points = sweep_points(name)
    assert len(points) >= 2
    for i, point in enumerate(points):
        overrides = [f"+sweeps={name}", "debug=tiny", *point]
        fails = next((TINY_FAILS[o] for o in point if o in TINY_FAILS), None)
        if fails:  # a failed point is a row of the table that says so
            with pytest.raises(ValueError, match=fails):
                run_point(sweep_dir / str(i), overrides)
            continue
        results = run_point(sweep_dir / str(i), overrides)
        assert results["schema"] == SCHEMA and results["final_stage"] in results["evaluations"]
        if "rl" in results["training"]:  # debug=tiny's 2, unless the point sets its own (an appended group, applied last)
            assert results["training"]["rl"]["steps"] == compose_config(overrides).trainer.total_steps
    cfg = compose_config([f"+sweeps={name}", "debug=tiny"])
    columns = list(cfg.report.columns or DEFAULT_REPORT_COLUMNS)
    files = write_report([sweep_dir], sweep_dir, columns=columns, paper=cfg.report.paper, chart=cfg.report.chart)
    assert files["png"].stat().st_size > 1000
    check_report_against_run_dirs(sweep_dir, columns)
    table = build_table([sweep_dir], columns)
    # rows are the swept choices, in the sweep's order
    assert [r.label for r in table.rows] == [" ".join(o.lstrip("+") for o in p) for p in points]


# peak memory: 6.4 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_a_real_multirun_writes_its_table_with_the_failed_points_as_rows(tmp_path):
    """`python -m judge_rl -m +sweeps=thinkj_table9 debug=tiny`, with two extra points that fail validation."""
    rc, out, err = finish(judge_rl("-m", "+sweeps=thinkj_table9", "debug=tiny", "trainer.save_every=1,-1",
                                   f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path), timeout=900)
    assert rc == 1, err[-3000:]  # failed points make the sweep exit 1, after the table is written
    sweep = tmp_path / "sweep"
    assert "judge_rl: sweep report:" in out and "2 of 4 sweep points did not finish" in err
    columns = yaml.safe_load((REPO_ROOT / "sweeps" / "thinkj_table9.yaml").read_text())["report"]["columns"]
    check_report_against_run_dirs(sweep, columns)
    table = build_table([sweep], columns, paper="thinkj_table9")
    by_label = {r.label: r for r in table.rows}
    assert set(by_label) == {"reward=margin trainer.save_every=1", "reward=margin trainer.save_every=-1",
                             "reward=strength trainer.save_every=1", "reward=strength trainer.save_every=-1"}
    md = (sweep / "report.md").read_text()
    for label, row in by_label.items():
        if label.endswith("=-1"):
            assert row.status == "failed" and "trainer.save_every=-1: expected >= 1" in row.error
            assert f"| {label} | failed: ValueError: trainer.save_every=-1: expected >= 1" in md
        else:
            assert row.status == "finished" and read_status(row.run_dir)["status"] == "finished"
            assert row.cells["training/rl/steps"] == 2
    # the paper's columns are their own, titled with the paper, model and scale
    assert "paper Think-J T9, Qwen2.5-7B-Instruct (7B): RewardBench" in md and "Llama-3-8B-Instruct (8B)" in md
    assert (sweep / "report.png").stat().st_size > 1000


def test_the_command_reads_any_run_dirs_and_fails_in_one_line(tmp_path, capsys):
    assert report_main([str(tmp_path / "absent")]) == 1
    assert "absent: no such directory" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert report_main([str(empty)]) == 1
    assert "neither a run directory nor a multirun directory" in capsys.readouterr().err


def test_a_point_without_results_is_a_row_that_says_so(tmp_path):
    point = tmp_path / "sweep" / "0"
    (point / ".hydra").mkdir(parents=True)
    (point / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(["reward=strength"]))
    table = build_table([tmp_path / "sweep"])
    assert [(r.label, r.status) for r in table.rows] == [("reward=strength", "missing")]
    assert table.records()[0][1] == "missing: no results"
    assert table.records()[0][2:] == ["-"] * len(DEFAULT_REPORT_COLUMNS)


def test_a_point_with_an_unreadable_file_is_a_row_naming_the_file_and_the_rest_is_written(tmp_path, capsys):
    from judge_rl.reports.schema import new_results, write_results
    from judge_rl.rundir import write_status

    sweep = tmp_path / "sweep"
    broken = {"1": ("results.json", "[]"), "2": ("status.json", '["finished"]'),
              "3": ("resolved_config.yaml", "reward:\n  name: [strength\n"), "4": ("results.json", '{"schema": "judge_rl.res')}
    for i, reward in enumerate(["strength", "margin", "binary", "judgelrm", "consistency"]):
        point = sweep / str(i)
        (point / ".hydra").mkdir(parents=True)
        (point / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump([f"reward={reward}"]))
        (point / "resolved_config.yaml").write_text(yaml.safe_dump({"reward": {"name": reward}}))
        write_status(point, "finished")
        doc = new_results("main", point, overrides=[f"reward={reward}"])
        doc["wall_s"] = 7.0
        write_results(point, doc)
        if str(i) in broken:
            name, text = broken[str(i)]
            (point / name).write_text(text)
    assert report_main([str(sweep), "--columns", "wall_s"]) == 0
    md = (sweep / "report.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in md.splitlines() if line.startswith("| reward=")}
    assert rows["reward=strength"].endswith("| finished | 7 |")
    assert f"unreadable: {sweep}/1/results.json: a list, expected an object" in rows["reward=margin"]
    assert f"unreadable: {sweep}/2/status.json: a list, expected an object" in rows["reward=binary"]
    assert f"unreadable: {sweep}/3/resolved_config.yaml: not valid YAML" in rows["reward=judgelrm"]
    assert f"unreadable: {sweep}/4/results.json: not valid JSON" in rows["reward=consistency"]
    with (sweep / "report.csv").open() as f:
        assert [r["status"] for r in csv.DictReader(f)] == ["finished"] + ["unreadable"] * 4
    assert "Traceback" not in capsys.readouterr().err


def test_paper_numbers_sit_in_their_own_columns_matched_by_the_swept_key():
    t = load_paper_table("judgelrm_table1")
    assert t.value({"reward": "judgelrm"}, "Qwen2.5-7B-Instruct/pandalm/f1") == 75.05
    assert t.value({"reward": "binary"}, "Qwen2.5-3B-Instruct/judgelm/agreement") == 83.58
    assert t.value({"reward": "margin"}, "Qwen2.5-7B-Instruct/pandalm/f1") is None  # no such paper row
    assert t.column_title("Qwen2.5-7B-Instruct/pandalm/f1") == "paper JudgeLRM T1, Qwen2.5-7B-Instruct (7B): PandaLM F1"
    with pytest.raises(ValueError, match="no such table"):
        load_paper_table("thinkj_table99")


RB = "rewardbench/official"


@pytest.mark.parametrize("key", ["thinkj_table3", "thinkj_table4", "thinkj_table8", "thinkj_table9"])
def test_every_thinkj_table_has_the_published_numbers_of_each_row_we_map(key):
    t = load_paper_table(key)
    assert t.missing is None and t.rows and t.models
    assert set(t.column_names) == {f"{RB}/sections/{s}" for s in ("Chat", "Chat Hard", "Safety", "Reasoning")} | {f"{RB}/overall"}
    for m in t.models:
        for row in t.rows.values():
            assert set(m["values"][row]) == set(t.column_names), (key, m["model"], row)
            assert all(isinstance(v, float) and 0 < v <= 100 for v in m["values"][row].values())


# (sweep file, paper table, {point label: (paper column title, cell)}): published numbers as printed
THINKJ_BESIDE_OURS = [
    ("thinkj_table3", "thinkj_table3", {
        "algorithm=grpo": ("paper Think-J T3, Qwen2.5-7B-Instruct on HelpSteer2-Preference (7B): RewardBench Overall", "85.300"),
        "algorithm=bt": ("paper Think-J T3, Llama-3-8B-Instruct on HH-RLHF (8B): RewardBench Overall", "79.700"),
        "algorithm=sft_direct": ("paper Think-J T3, Qwen2.5-7B-Instruct on HH-RLHF (7B): RewardBench Chat Hard", "74.300"),
        "algorithm=sft_cot": ("paper Think-J T3, Llama-3-8B-Instruct on HelpSteer2-Preference (8B): RewardBench Safety", "80.800"),
        "algorithm=direct": ("paper Think-J T3, Qwen2.5-7B-Instruct on HelpSteer2-Preference (7B): RewardBench Overall", "77.500"),
    }),
    ("thinkj_table4", "thinkj_table4", {
        "algorithm=dpo_critic": ("paper Think-J T4, Llama-3-8B-Instruct (8B): RewardBench Overall", "83.200"),
        "algorithm=ppo": ("paper Think-J T4, Llama-3-8B-Instruct (8B): RewardBench Chat", "70.400"),
        "algorithm=reinforce_pp": ("paper Think-J T4, Qwen2.5-7B-Instruct (7B): RewardBench Overall", "84.500"),
        "algorithm=grpo": ("paper Think-J T4, Qwen2.5-7B-Instruct (7B): RewardBench Reasoning", "80.400"),
    }),
    ("thinkj_table9", "thinkj_table9", {
        "reward=margin": ("paper Think-J T9, Llama-3-8B-Instruct (8B): RewardBench Average", "81.300"),
        "reward=strength": ("paper Think-J T9, Qwen2.5-7B-Instruct (7B): RewardBench Average", "85.300"),
    }),
    # Table 8 is regenerated by the reward_weights grid; only a strength weight of 0.0 means what the paper's does
    ("reward_weights", "thinkj_table8", {
        "reward.weights.format_weight=0.0 reward.weights.strength_weight=0.0":
            ("paper Think-J T8, Qwen2.5-32B-Instruct (32B): RewardBench Overall", "89.500"),
        "reward.weights.format_weight=0.1 reward.weights.strength_weight=0.0":
            ("paper Think-J T8, Llama-3-8B-Instruct (8B): RewardBench Chat Hard", "74.300"),
        "reward.weights.format_weight=0.0 reward.weights.strength_weight=1.0":
            ("paper Think-J T8, Qwen2.5-32B-Instruct (32B): RewardBench Overall", "-"),
    }),
]


@pytest.mark.parametrize("sweep, paper, expected", THINKJ_BESIDE_OURS, ids=[p for _, p, _ in THINKJ_BESIDE_OURS])
def test_the_report_shows_thinkj_numbers_beside_the_rows_our_sweeps_regenerate(tmp_path, sweep, paper, expected):
    for i, point in enumerate(sweep_points(sweep)):  # each point of the sweep's grid, as Hydra saves its overrides
        (tmp_path / str(i) / ".hydra").mkdir(parents=True)
        (tmp_path / str(i) / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump([f"+sweeps={sweep}", *point]))
    table = build_table([tmp_path], ["judge/held_out/accuracy"], paper=paper)
    header = table.header()
    cells = {line[0]: dict(zip(header, line)) for line in table.records()}
    for label, (column, text) in expected.items():
        assert cells[label][column] == text, (label, column)
    if paper != "thinkj_table8":  # every point of the sweep has a paper row, with a number in every paper column
        assert all(v != "-" for line in cells.values() for k, v in line.items() if k.startswith("paper "))
    assert f"Think-J (Huang et al., 2025), Table {paper[-1]}" in to_markdown(table)


def test_cells_show_intervals_and_counts():
    assert format_cell(0.5, [0.25, 0.75], "rl/held_out/accuracy") == "0.500 [0.250, 0.750]"
    assert format_cell(None, None, "x") == "-" and format_cell(float("nan"), None, "x") == "-"
    assert format_cell(2.0, None, "training/rl/steps") == "2"
    assert title("rl/held_out/a_preference_rate") == "rl A-pref"


def test_the_scatter_draws_a_point_without_x_as_a_reference_line_and_names_the_points_it_cannot_draw(tmp_path):
    from judge_rl.report import ReportTable, Row, scatter_layout, write_scatter

    x, y = "grader/held_out/accuracy", "task_after_minus_before/prompt_level_strict_accuracy"
    rows = [
        Row("reward_judge=ladder_sft", tmp_path, "finished", None,
            {x: 0.6, f"{x}_ci": [0.55, 0.66], y: -0.04, f"{y}_ci": [-0.12, 0.04]}),
        Row("reward_judge=oracle", tmp_path, "finished", None, {y: 0.02, f"{y}_ci": [-0.10, 0.15]}),
        Row("reward_judge=ladder_untrained", tmp_path, "failed: JudgeFailureRateExceeded: 100%", "x", {x: 0.0}),
    ]
    layout = scatter_layout(ReportTable([x, y], rows), x, y)
    assert layout.dots == [("ladder_sft", 0.6, (0.55, 0.66), -0.04, (-0.12, 0.04))]
    assert layout.references == [("oracle", 0.02, (-0.10, 0.15))]
    assert layout.missing == ["ladder_untrained (failed)"]
    assert write_scatter(ReportTable([x, y], rows), x, y, tmp_path / "s.png").stat().st_size > 1000
    assert write_scatter(ReportTable([x, y], rows[2:]), x, y, tmp_path / "none.png") is None  # nothing to draw


def hand_made_sweep(root: Path) -> Path:
    """Two points written through the schema's own writer: one finished with results, one failed."""
    from judge_rl.reports.schema import new_results, write_results
    from judge_rl.rundir import write_status

    sweep = root / "sweep"
    for i, (reward, acc) in enumerate((("margin", 0.25), ("strength", 0.75))):
        point = sweep / str(i)
        (point / ".hydra").mkdir(parents=True)
        (point / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(["+sweeps=thinkj_table9", f"reward={reward}"]))
        if reward == "margin":
            write_status(point, "failed", "RuntimeError: out of memory")
            continue
        doc = new_results("main", point)
        doc["evaluations"]["rl"] = {"held_out": {"metrics": {"accuracy": acc}, "ci": {"accuracy": {"low": 0.5, "high": 1.0}}},
                                    "benchmarks": {}}
        write_results(point, doc)
        write_status(point, "finished")
    return sweep


def test_the_table_goes_to_wandb_as_a_table_and_a_report_needs_its_package(tmp_path, monkeypatch):
    import sys

    from judge_rl.report import build_wandb_report, log_wandb_table

    sweep = hand_made_sweep(tmp_path)
    table = build_table([sweep], ["rl/held_out/accuracy"])
    assert table.records() == [["reward=margin", "failed: RuntimeError: out of memory", "-"],
                               ["reward=strength", "finished", "0.750 [0.500, 1.000]"]]
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    assert log_wandb_table(table, "judge_rl-test", None, "g1") == "offline"
    saved = list((sweep / "wandb").glob("offline-run-*/files/media/table/report_*.table.json"))
    assert len(saved) == 1
    data = json.loads(saved[0].read_text())
    assert data["columns"] == ["point", "status", "rl acc"] and data["data"] == table.records()
    monkeypatch.setitem(sys.modules, "wandb_workspaces", None)  # the optional package is not installed
    monkeypatch.setitem(sys.modules, "wandb_workspaces.reports.v2", None)
    with pytest.raises(RuntimeError, match="pip install wandb-workspaces"):
        build_wandb_report(table, "judge_rl", "team", "g1")


@pytest.mark.parametrize("debug", ["tiny", "cpu"])
@pytest.mark.parametrize("name", SWEEPS)
def test_every_sweep_point_composes_and_validates_at_each_debug_scale(name, debug):
    from judge_rl.jobs.train import to_job_config

    for point in sweep_points(name):
        job = to_job_config(compose_config([f"+sweeps={name}", f"debug={debug}", *point, "run_dir=/tmp/unused"]))
        assert job.logger.name == "none" and job.eval.benchmarks == []
        assert job.model.name == ("tiny-random" if debug == "tiny" else "smollm2-135m")


def test_versus_names_exactly_one_swept_point_or_fails_in_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"report.versus='oracle': names 0 points \(expected one of the swept values: "
                                         r"margin, strength\)"):
        build_table([hand_made_sweep(tmp_path)], versus="oracle")

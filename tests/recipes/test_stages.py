"""The stages every recipe shares (judge_rl/recipes/stages.py): what setup leaves out of the data is counted, with
its reason, in results.json and in the held-out evaluation's summary.json. On the main before this the job printed
"1 of 4 pairs exceed model.max_prompt_length ... left out" while both files said too_long_units: 0."""

from __future__ import annotations

import json

from judge_rl.jobs.train import run

from conftest import TINY_RUN, compose_config


# peak memory: 2.9 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_pairs_left_out_as_too_long_or_malformed_are_counted_in_summary_and_results(tmp_path):
    rows = [{"input": f"Which is the capital of country {i}?", "output_1": f"City {i}.", "output_2": f"Town {i}.",
             "label": 1} for i in range(4)]  # fmt: skip
    rows[2]["output_2"] = "word " * 600  # a judge prompt of 600+ tokens
    rows.append({"input": "A row without its label", "output_1": "a", "output_2": "b"})  # malformed: skipped
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(rows))
    run_dir = tmp_path / "run"
    run(compose_config([*TINY_RUN, "stages=[eval_base]", "eval.benchmarks=[]", "model.max_prompt_length=400",
                        "data=llmbar", f"data.eval.kwargs.path={path}", "+data.eval.kwargs.on_error=skip", f"run_dir={run_dir}"]))  # fmt: skip
    summary = json.loads((run_dir / "eval" / "base" / "summary.json").read_text())
    assert summary["overall"]["n_pairs"] == 3
    assert summary["counts"]["too_long_units"] == 1 and summary["counts"]["skipped_rows"] == 1
    assert len(summary["too_long"]) == 1
    assert next(iter(summary["too_long"].values())) > 400
    assert "model.max_prompt_length=400" in summary["too_long_reason"]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["evaluations"]["base"]["held_out"]["counts"]["too_long_units"] == 1
    split = results["data"]["splits"]["data.eval"]
    assert (split["pairs_loaded"], split["skipped_rows"], split["too_long_units"], split["pairs_kept"]) == (4, 1, 1, 3)
    assert "label" in split["skipped"][0]
    assert results["data"]["splits"]["data.train"]["too_long_units"] == 0


# peak memory: 5.4 GB of the machine in use while it ran (fresh-clone .ci/run of 832cbc5, AVX2-only kind; Ray at 23.4)
def test_eval_stages_judge_with_vllm_and_give_the_hf_engines_verdicts(tmp_path):
    """eval.server=vllm (what eval.server=auto picks on a CPU with vLLM installed): the embedded judge's held-out
    verdicts at eval_base, judged by vLLM's engine on the model's directory, are the in-process hf engine's."""
    from vllm_support import require_vllm

    from judge_rl.recipes.stages import eval_engine

    require_vllm()
    assert eval_engine("auto", "tiny_random", "cpu") == "hf" and eval_engine("auto", "gguf_package", "cuda") == "hf"
    assert eval_engine("auto", "gguf_package", "cpu") == "vllm"
    verdicts = {}
    for server in ("hf", "vllm"):
        run_dir = tmp_path / server
        run(compose_config(["logger=none", "stages=[eval_base]", "eval.limit=6", "eval.benchmarks=[]",
                            "eval.max_new_tokens=48", f"eval.server={server}", f"run_dir={run_dir}"]))  # fmt: skip
        rows = [json.loads(line) for line in (run_dir / "eval" / "base" / "judgments.jsonl").read_text().splitlines()]
        verdicts[server] = {(r["pair_id"], r["chosen_position"]): (r["winner"], r["strength"], r["parse_error"]) for r in rows}
    assert len(verdicts["hf"]) == 12 and verdicts["vllm"] == verdicts["hf"]

"""Judge-prompt token lengths of every set judge_rl reads (issue 53): median, p90, p99, max, and how many exceed
512 / 1024 / 2048 / 4096 tokens.

What: each benchmark option (conf/benchmark/*.yaml) and each training-data option (conf/data/*.yaml, its train and
eval split as configured) whose data is on this machine; one whose file is missing (or a hub dataset, or a path the
option leaves to the command line) is listed as "no file", not an error. Its judge prompts are built as the project
builds them: a benchmark's tasks by its own `tasks` (judge_rl/evaluation/benchmarks), a data split's pairs in both
orders as the held-out evaluation judges them (`PairBenchmark().tasks`, judge_rl/evaluation/harness.py), with the
prompt `--prompt` (default `strength`, the default reward's). Each prompt is tokenized as the judge sees it, the chat
template applied (`encode_chat`), by the embedded tokenizer (SmolLM2-135M's: Qwen's and Llama's give other counts).
A unit (a pair, or a benchmark's multi-answer row) counts as its longest prompt: what `fit_context` and
`fit_to_context` compare with a limit to leave a unit out.

Why: `model.max_prompt_length` (512 for the embedded model) silently decides which real pairs a run can see; this is
the table that says what each limit keeps (docs/scale.md, "Judge prompt lengths").

    .venv/bin/python scripts/judge_lengths.py --out lengths.md --json lengths.json   # from the repo root
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from omegaconf.errors import MissingMandatoryValue

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a file: the checkout's judge_rl

from judge_rl.config.paths import (  # noqa: E402
    CONF_DIR, group_options, load_benchmark_config, load_model_config, set_repo_root_env)
from judge_rl.data import load_dataset_pairs  # noqa: E402
from judge_rl.data.loaders import files_read, is_missing_local_file  # noqa: E402
from judge_rl.evaluation.benchmarks import get_benchmark  # noqa: E402
from judge_rl.evaluation.benchmarks.pairwise import PairBenchmark  # noqa: E402
from judge_rl.evaluation.harness import task_unit  # noqa: E402
from judge_rl.models.loading import load_tokenizer  # noqa: E402
from judge_rl.prompts import get_prompt  # noqa: E402
from judge_rl.rollouts import encode_chat  # noqa: E402

LIMITS = (512, 1024, 2048, 4096)
TOKENIZER_MODEL = "smollm2-135m"


def unit_lengths(tasks, tokenizer) -> dict[str, int]:
    """{unit id: tokens of its longest judge prompt, chat template applied}."""
    out: dict[str, int] = {}
    for t in tasks:
        unit = task_unit(t)
        out[unit] = max(out.get(unit, 0), len(encode_chat(tokenizer, t.prompt.messages(t.item))))
    return out


def percentile(values: list[int], q: float) -> int:
    """The nearest-rank q-th percentile (a length some unit has)."""
    ranked = sorted(values)
    return ranked[max(0, math.ceil(len(ranked) * q / 100) - 1)]


def row(name: str, lengths: dict[str, int]) -> dict:
    values = list(lengths.values())
    return {"set": name, "items": len(values), "median": statistics.median(values), "p90": percentile(values, 90),
            "p99": percentile(values, 99), "max": max(values), "over": {n: sum(v > n for v in values) for n in LIMITS}}


def where(path: str) -> str:
    """A path that is no file here, as the table names it: a missing local file, or a hub dataset."""
    return path if is_missing_local_file(path) else f"hub dataset {path}"


def benchmark_sets(limit: int | None):
    """(name, tasks-maker or the reason there is none) per benchmark option."""
    for name in group_options("benchmark"):
        try:
            spec = load_benchmark_config(name, **({"limit": limit} if limit else {}))
        except MissingMandatoryValue:  # `path: ???`: the option asks for benchmark.path on the command line
            yield f"benchmark={name}", "no file (set benchmark.path)"
            continue
        if not Path(spec.path).is_file():
            yield f"benchmark={name}", f"no file ({where(spec.path)})"
            continue
        yield f"benchmark={name}", functools.partial(benchmark_tasks, spec)


def benchmark_tasks(spec, prompt) -> list:
    """A benchmark's judge requests, as the eval app's harness makes them (evaluation/harness.evaluate_benchmark)."""
    bench = get_benchmark(spec.kind)
    return bench.tasks(bench.load(spec).units, prompt, spec)


def data_sets(limit: int | None):
    """(name, tasks-maker or the reason there is none) per data option and split, its kwargs as the main job composes
    them (conf/config.yaml's seed)."""
    set_repo_root_env()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for name in group_options("data"):
            data = OmegaConf.to_container(compose(config_name="config", overrides=[f"data={name}"]).data, resolve=True)
            for split in ("train", "eval"):
                loader, kwargs = data[split]["loader"], data[split]["kwargs"]
                paths = [*map(str, files_read(loader, kwargs)), *([str(kwargs["path"])] if "path" in kwargs else [])]
                missing = [where(p) for p in dict.fromkeys(paths) if not Path(p).is_file()]
                if missing:
                    yield f"data={name} {split}", f"no file ({', '.join(missing)})"
                    continue
                yield f"data={name} {split}", functools.partial(split_tasks, loader, kwargs, limit)


def split_tasks(loader: str, kwargs: dict, limit: int | None, prompt) -> list:
    """A data split's first `limit` pairs in both orders, as the held-out evaluation judges them
    (evaluation/harness.evaluate_pairs)."""
    return PairBenchmark().tasks(list(load_dataset_pairs(loader, **kwargs))[:limit], prompt, None)


def table(rows: list[dict], absent: dict[str, str]) -> str:
    head = ["set", "items", "median", "p90", "p99", "max", *(f"> {n}" for n in LIMITS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["set"], r["items"], f"{r['median']:g}", r["p90"], r["p99"], r["max"], *r["over"].values()]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += [f"| {name} | {why} |" + " |" * (len(head) - 2) for name, why in absent.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="the first N units of each set")
    parser.add_argument("--prompt", default="strength", help="the judge prompt (judge_rl/prompts)")
    parser.add_argument("--sets", nargs="*", default=None,
                        help="only these sets, named as in the table (benchmark=faireval 'data=llmbar eval')")
    parser.add_argument("--cache-dir", default=os.environ.get("JUDGE_RL_CACHE", "~/.cache/judge_rl"))
    parser.add_argument("--out", type=Path, help="write the markdown table here")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    prompt = get_prompt(args.prompt)
    tokenizer = load_tokenizer(load_model_config(TOKENIZER_MODEL), args.cache_dir)
    rows, absent = [], {}
    for name, make in [*benchmark_sets(args.limit), *data_sets(args.limit)]:
        if args.sets is not None and name not in args.sets:
            continue
        if isinstance(make, str):
            absent[name] = make
        else:
            rows.append(row(name, unit_lengths(make(prompt), tokenizer)))
    text = (f"Judge prompt tokens ({TOKENIZER_MODEL}'s tokenizer, chat template applied), prompt `{args.prompt}`, "
            f"a unit = its longest prompt{f', first {args.limit} units a set' if args.limit else ''}:\n\n"
            + table(rows, absent))
    print(text)
    if args.out:
        args.out.write_text(text)
    out = {"tokenizer": TOKENIZER_MODEL, "prompt": args.prompt, "limit": args.limit, "rows": rows, "no_file": absent}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()

"""judge_rl pairs -> verl's RL parquet (what `verl.utils.dataset.rl_dataset.RLHFDataset` reads).

What: one row per judge item, in verl's RL data schema:

  data_source   the pair's source (e.g. "synthetic/train"); verl passes it to compute_score
  prompt        the judge prompt as chat messages, a list of {"role", "content"}: verl's agent loop
                applies the model's chat template to it (data.prompt_key = "prompt")
  ability       "judge"
  reward_model  {"style": "rule", "ground_truth": <JSON text of the item's label>}; verl's reward
                manager passes reward_model["ground_truth"] to compute_score, which reads JSON text
  extra_info    {"index", "pair_id", "item_id", "reward_name"}; verl passes it as compute_score's
                extra_info (compute_score falls back to extra_info["reward_name"])

Which items: a pairwise prompt judges each pair once, the better response at (a) for exactly half of
them (`balanced_positions`, seeded: the same split the local backend trains on); `orders="both"`
writes both orders of every pair instead (held-out data: judge_rl evaluates both orders). A pointwise
prompt (`prompt.kind == "pointwise"`) judges each response of a pair alone (`pointwise_items`).

Why JSON text for the ground truth: parquet needs one type per column, and labels differ by prompt
kind (`{"winner", "strength"}` with a null strength for unlabelled sources, or `{"label", "scale"}`);
a string column holds them all and compute_score parses it.

Over-long prompts: verl's `data.filter_overlong_prompts` (set by the translator) drops every row whose prompt, chat
template applied, is longer than `data.max_prompt_length` (`model.max_prompt_length`), silently. `export_job_data`
counts them first, per split, with their pair ids and the reason (`too_long_rows`), in the shape the local path's
`fit_to_context` writes into results.json's `data.splits`; verl still drops them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from judge_rl.data.pairs import PreferencePair, balanced_positions, both_orders, pointwise_items

ABILITY = "judge"
JUDGING_MODES = ("pairwise", "pointwise")
ORDERS = ("balanced", "both")
EXTRA_INFO = {"index": "int64", "pair_id": "string", "item_id": "string", "reward_name": "string"}


def reward_module_path() -> str:
    """Absolute path of judge_rl/rewards/__init__.py, the file verl imports `compute_score` from
    (reward.custom_reward_function.path)."""
    import judge_rl.rewards

    return str(Path(judge_rl.rewards.__file__).resolve())


def judge_items(
    pairs: Sequence[PreferencePair], prompt, *, seed: int, mode: str | None = None, orders: str = "balanced"
):
    """The items a judge sees for `pairs` under `prompt` (see the module docstring)."""
    kind = getattr(prompt, "kind", None)
    mode = kind if mode is None else mode
    if mode not in JUDGING_MODES:
        raise ValueError(f"mode={mode!r}: expected one of {JUDGING_MODES}")
    if mode != kind:
        raise ValueError(f"mode={mode!r} but prompt {getattr(prompt, 'name', prompt)!r} is a {kind} prompt")
    if orders not in ORDERS:
        raise ValueError(f"orders={orders!r}: expected one of {ORDERS}")
    if mode == "pointwise":
        return pointwise_items(pairs)
    return balanced_positions(pairs, seed) if orders == "balanced" else both_orders(pairs)


def judge_rows(
    pairs: Sequence[PreferencePair],
    prompt,
    *,
    seed: int,
    reward_name: str,
    mode: str | None = None,
    orders: str = "balanced",
) -> list[dict[str, Any]]:
    """verl RL rows (plain dicts, the parquet's records) for `pairs` judged with `prompt`."""
    rows = []
    for index, item in enumerate(judge_items(pairs, prompt, seed=seed, mode=mode, orders=orders)):
        messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt.messages(item)]
        rows.append(
            {
                "data_source": item.pair.source,
                "prompt": messages,
                "ability": ABILITY,
                "reward_model": {"style": "rule", "ground_truth": json.dumps(item.ground_truth, sort_keys=True)},
                "extra_info": {
                    "index": index,
                    "pair_id": item.pair.pair_id,
                    "item_id": item.item_id,
                    "reward_name": reward_name,
                },
            }
        )
    return rows


def export_parquet(
    pairs: Sequence[PreferencePair],
    prompt,
    path: str | os.PathLike,
    *,
    seed: int,
    reward_name: str,
    mode: str | None = None,
    orders: str = "balanced",
) -> int:
    """Write verl's RL parquet for `pairs` to `path` (atomically); returns the number of rows.

    mode: the judging mode, "pairwise" or "pointwise"; it must match `prompt.kind` (None: take it from
    the prompt). orders: "balanced" (training: one order per pair, half each) or "both" (held-out).
    """
    rows = judge_rows(pairs, prompt, seed=seed, reward_name=reward_name, mode=mode, orders=orders)
    return write_judge_rows(rows, path)


def write_judge_rows(rows: Sequence[dict[str, Any]], path: str | os.PathLike) -> int:
    """Write `judge_rows`' rows to `path` (atomically); returns the number of rows."""
    if not rows:
        raise ValueError("no pairs to export")
    return write_rl_parquet(rows, path, EXTRA_INFO)


def write_rl_parquet(rows: Sequence[dict[str, Any]], path: str | os.PathLike, extra_info: dict[str, str]) -> int:
    """Write verl RL rows (module docstring's columns) to `path` atomically; returns the number of rows.
    extra_info: the fields of the extra_info struct and their pyarrow type names ("int64", "string", ...)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            ("extra_info", pa.struct([(name, pa.type_for_alias(kind)) for name, kind in extra_info.items()])),
        ]
    )
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), tmp)
    os.replace(tmp, target)
    return len(rows)


def export_job_data(job, out_dir: str | os.PathLike, reward, counts: dict[str, dict] | None = None) -> dict[str, str]:
    """Export a job's train and held-out splits for verl; returns verl_config's `data_files`.

    train: data.train, one balanced order per pair; val: data.eval (first eval.limit pairs), both
    orders for pairwise prompts, as judge_rl evaluates; judged with `reward`'s prompt. Rows over the prompt
    budget are kept in the files (the translated config sets data.filter_overlong_prompts, and verl drops them by
    token count), but counted first: `counts["verl.train"]` and `counts["verl.val"]` get them with their pair ids
    and reason (`too_long_rows`), and a console line names each split that has any.
    """
    from judge_rl.data import load_dataset_pairs
    from judge_rl.prompts import get_prompt

    prompt = get_prompt(reward.prompt)
    tokenizer = verl_tokenizer(job)
    out = Path(out_dir)
    files = {}
    for split, spec, orders in (("train", job.data.train, "balanced"), ("val", job.data.eval, "both")):
        pairs = list(load_dataset_pairs(spec.loader, **spec.kwargs))
        if split == "val" and job.eval.limit is not None:
            pairs = pairs[: job.eval.limit]
        rows = judge_rows(pairs, prompt, seed=job.seed, reward_name=job.reward.name, orders=orders)
        if tokenizer is not None:
            entry = too_long_rows(rows, tokenizer, job.model.max_prompt_length, f"verl.{split}")
            if counts is not None:
                counts.setdefault(f"verl.{split}", {}).update(entry)
        path = out / f"{split}.parquet"
        write_judge_rows(rows, path)
        files[split] = str(path.resolve())
    return files


def verl_tokenizer(job):
    """The tokenizer verl's filter_overlong_prompts counts with (the job's model's), or None, said in one console line,
    where it is not on this machine (a hub model the HF cache does not hold: no download is tried, which offline
    would retry for a minute) or does not load: the over-long rows are then not counted."""
    from judge_rl.config.model_dirs import looks_local
    from judge_rl.models.loading import load_tokenizer
    from judge_rl.reports.console import console

    m = job.model
    why = None
    if m.weights != "random" and m.source == "hub" and not looks_local(m.path):
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(m.path, "tokenizer_config.json"), str):
            why = f"hub model {m.path}, not in the HF cache"
    if why is None:
        try:
            return load_tokenizer(m, job.cache_dir)
        except Exception as e:  # noqa: BLE001  a tokenizer that does not load here only costs the count
            why = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
    console.print(f"[yellow]verl export: model={m.name}'s tokenizer is not here ({why}): the prompts over "
                  f"model.max_prompt_length={m.max_prompt_length} tokens, which verl drops, could not be "
                  "counted[/yellow]", soft_wrap=True)
    return None


def too_long_rows(rows: Sequence[dict[str, Any]], tokenizer, max_len: int, key: str) -> dict[str, Any]:
    """The rows verl's data.filter_overlong_prompts will drop: those whose prompt, chat template applied (its
    `encode_chat`), is longer than `max_len`; in the shape of recipes.stages.fit_to_context's count (`pairs_kept`: the
    pairs none of whose rows is dropped; `too_long`: the first 20 of the others, by pair id, with their longest prompt
    in tokens), plus `rows` and `too_long_rows`. One console line when any are over."""
    from judge_rl.reports.console import console
    from judge_rl.rollouts import encode_chat

    longest: dict[str, int] = {}
    over = 0
    for row in rows:
        pair_id, n = row["extra_info"]["pair_id"], len(encode_chat(tokenizer, list(row["prompt"])))
        longest[pair_id] = max(n, longest.get(pair_id, 0))
        over += n > max_len
    too_long = {pair_id: n for pair_id, n in longest.items() if n > max_len}
    reason = (f"judge prompt longer than model.max_prompt_length={max_len} tokens: verl's data.filter_overlong_prompts "
              "drops the row")
    if too_long:
        first = next(iter(too_long.items()))
        console.print(f"[yellow]{key}: {over} of {len(rows)} rows ({len(too_long)} of {len(longest)} pairs) exceed "
                      f"model.max_prompt_length={max_len} tokens and verl drops them, e.g. {first[0]} "
                      f"({first[1]} tokens)[/yellow]", soft_wrap=True)
    return {"pairs_kept": len(longest) - len(too_long), "too_long_units": len(too_long), "too_long_reason": reason,
            "too_long": dict(list(too_long.items())[:20]), "rows": len(rows), "too_long_rows": over}


def judge_reward_kwargs(job, reward) -> dict[str, Any]:
    """reward.custom_reward_function.reward_kwargs of the main (judge) job, {reward_name, **weights}, after checking
    that its reward (`reward`, the job's) means on verl what it means locally (VerlTranslationError otherwise)."""
    from judge_rl.backends.verl.translate import VerlTranslationError

    if job.algorithm.group_both_orders:
        raise VerlTranslationError(
            "algorithm.group_both_orders=true puts both orders of a pair in one group; verl groups the samples of "
            "one prompt, so it would silently train per-order groups. Run it on the local backend (cluster=local)."
        )
    if getattr(reward, "both_orders", False):
        raise VerlTranslationError(
            f"reward={job.reward.name} rolls out both orders of a pair in one group and rescores them jointly "
            "(J1 consistency); verl's reward managers call compute_score one sample at a time, so on verl it "
            "would silently become the plain per-sample reward. Run it on the local backend (cluster=local)."
        )
    return {"reward_name": job.reward.name, **job.reward.weights}


def judge_verl_task(job, run_dir: str | os.PathLike, reward, counts: dict[str, dict] | None = None):
    """The main job's VerlTask (judge_rl/backends/__init__.py): its pairs exported under <run_dir>/verl/data (the rows
    verl will drop as over-long counted into `counts`, `export_job_data`), the reward function
    judge_rl/rewards/__init__.py:compute_score with the job's reward and weights."""
    from judge_rl.backends import VerlTask

    kwargs = judge_reward_kwargs(job, reward)
    data_files = export_job_data(job, Path(run_dir) / "verl" / "data", reward, counts)
    return VerlTask(data_files=data_files, reward_module=reward_module_path(), reward_kwargs=kwargs,
                    stages=tuple(job.stages))  # fmt: skip

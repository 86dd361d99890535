"""Write judge_rl/policy/tasks/task_bodies.jsonl: answers of the embedded policy (SmolLM2-135M-Instruct) to each base task of
the policy task, with no constraint, the bodies the task's preference pairs are built from (judge_rl/policy/
tasks/pairs.py). Bodies are the policy's own words, so a judge trained on the pairs reads the kind of text it will
grade; each kept body passes the true score's guard (judge_rl/policy/tasks/guard.py) and ends at a sentence.

    python scripts/make_task_bodies.py [--samples 6] [--keep 4] [--seed 0]

Sampled by the rollout engine `trainer.rollout_engine=auto` picks (vLLM's engine in this process where vLLM is
installed, else the policy itself), every task's samples in one batch, from torch's generator seeded by --seed; the
committed file was written by the defaults with vLLM.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge_rl.models.loading import load_model, load_tokenizer  # noqa: E402
from judge_rl.policy.tasks.prompts import BASE_TASKS  # noqa: E402
from judge_rl.policy.tasks.guard import guard_failure  # noqa: E402
from judge_rl.policy.tasks.pairs import BODIES_PATH  # noqa: E402
from judge_rl.rollouts import build_sampler, encode_chat, resolve_rollout_engine  # noqa: E402
from judge_rl.config.paths import load_model_config  # noqa: E402

CACHE = Path.home() / ".cache" / "judge_rl"
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def trim(text: str) -> str:
    """The text up to its last full sentence (an answer cut at max_new_tokens ends mid-sentence), stripped."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    return (text[: ends[-1]] if ends else text).strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=6)
    ap.add_argument("--keep", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--out", type=Path, default=BODIES_PATH)
    args = ap.parse_args()
    torch.set_num_threads(2)
    cfg = load_model_config("smollm2-135m")
    tokenizer = load_tokenizer(cfg, CACHE)
    model = load_model(cfg, CACHE, torch.device("cpu"), seed=0).eval()
    sampler = build_sampler(resolve_rollout_engine("auto", "cpu", cfg.source), model, tokenizer)
    prompts = [encode_chat(tokenizer, [{"role": "user", "content": task.text}]) for task in BASE_TASKS]
    torch.manual_seed(args.seed)
    with torch.no_grad():
        groups = sampler.sample(prompts, num_samples=args.samples, max_new_tokens=args.max_new_tokens, temperature=0.7,
                                top_p=1.0)  # fmt: skip
    sampler.close()
    rows = []
    for task, group in zip(BASE_TASKS, groups):
        kept = []
        for g in group:
            body = trim(g.text)
            if guard_failure(body, task.task_id) is None and body not in kept:
                kept.append(body)
        for k, body in enumerate(kept[: args.keep]):
            rows.append({"task_id": task.task_id, "k": k, "body": body})
        print(f"{task.task_id}: kept {min(len(kept), args.keep)} of {args.samples}", flush=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} bodies to {args.out}")


if __name__ == "__main__":
    main()

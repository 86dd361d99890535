"""The policy job on verl: its prompts as verl's RL parquet, its config translated to verl 0.9's `ppo_trainer`,
a dry run, and a launch.

    task = policy_rl_task(job, endpoint.base_url, endpoint.model)  # what the backends take (backends/__init__.py)
    BACKENDS.get("verl")(job, run_dir, task, logger.log)         # launch (judge_rl/backends/verl/launch.py)
    policy_dry_run(job, run_dir)                                   # `python -m judge_rl.policy ... --dry-run`

The translation is the main job's (judge_rl/backends/verl/translate.py: algorithm, model, batch shape,
rollout, trainer, checkpoints, logger), with the policy's reward instead of the judge job's:

  policy_reward=rule     reward.custom_reward_function = judge_rl/policy/verl/reward.py:rule_compute_score
                         (judge_rl.policy.rewards.rule_compute_score re-exported: sync, never fails),
                         reward_kwargs {level, guard}; reward manager verl's `naive`
  rubric | verif |       reward.custom_reward_function = judge_rl/policy/verl/reward.py:compute_score (async,
  judge_pairwise         calls the judge over HTTP), reward_kwargs = `policy_reward_kwargs` (every
                         policy_reward field as reward_<field>, the judge client's settings as judge_<field>,
                         the API key's environment variable by NAME only); reward manager
                         judge_rl/policy/verl/reward_manager.py:JudgeRewardManager (verl's rate-limited manager,
                         judge failures leave the batch), loaded with `source: importlib`
  judge.concurrency      reward.num_workers = min(8, concurrency) reward workers (1 on cluster.device=cpu), each with
                         reward.max_concurrent = ceil(concurrency / workers) samples and as many judge calls
                         in flight (the client's cap per process): about `concurrency` calls in all
  judge timeouts         reward.timeout = max(300, 4 x the client's worst case for one call) per sample; a sample
                         over it is a judge failure (dropped), never a zero
  judge_failure.mode     mask: a failed sample leaves the batch, its group's advantages come from the graded
                         samples (reward_manager.py; trainer.use_v1=true). drop_group is refused: verl 0.9.1
                         cannot drop a group left with fewer than min_group_size graded samples. A group with
                         no graded sample is replaced by a fresh prompt, at most 4 x prompts_per_step a step, then
                         the run stops (judge_rl/backends/verl/sampler.py, for every verl job); the local backend
                         masks such a step instead
  validation             none (trainer.val_before_train=false, test_freq=-1): the job measures the policy on
                         IFEval itself; verl still builds a loader from data.val_files, a small held-out split

Not translated: judge_failure.max_failure_rate (verl has no hook for it from the reward side: see
reward_manager.py). Known difference from the local backend under mask: verl's GRPO gives a group left with
one graded sample that sample's raw score as its advantage (mean 0, std 1 for a singleton group), not 0.

Data (`export_policy_data`): one row per prompt, the columns verl's RLHFDataset reads:
  data_source   "policy/<policy_data.name>/<split>"
  prompt        the conversation the policy answers (`PolicyPrompt.chat()`)
  ability       "instruction_following"
  reward_model  {"style": "rule", "ground_truth": PolicyPrompt.to_dict() as JSON text}
  extra_info    {"index", "prompt_id", "reward_name", "split"}
train: the job's training prompts (judge_rl.policy.tasks.sources.load_policy_prompts: generated, or a rubric / VerIF file);
val: for generated prompts, `VAL_PROMPTS` prompts of the generator's held-out split (disjoint base tasks); for a
file, its first `VAL_PROMPTS` rows.

No secret reaches a file: the key is read by the judge client from `judge.api_key_env` at each request; only the
variable's name travels, and its value never goes into Ray's runtime env: the reward workers inherit it from the Ray
the job starts, or read it from their node's environment (judge_rl/backends/verl/entry.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Sequence

from judge_rl.backends import RLTask, VerlTask
from judge_rl.backends.verl.export import write_rl_parquet
from judge_rl.backends.verl.launch import dry_run
from judge_rl.backends.verl.translate import VerlTranslationError
from judge_rl.policy.verl.reward_outcomes import OUTCOMES_ENV, OUTCOMES_FILE
from judge_rl.policy.config import PolicyJobConfig, RewardJudgeConfig
from judge_rl.policy.tasks.prompts import PolicyPrompt
from judge_rl.policy.rewards import POLICY_REWARDS
from judge_rl.policy.tasks.sources import load_policy_prompts
from judge_rl.reports.console import console

ABILITY = "instruction_following"
VAL_PROMPTS = 16
EXTRA_INFO = {"index": "int64", "prompt_id": "string", "reward_name": "string", "split": "string"}
VERL_REWARD_WORKERS = 8  # verl's default reward.num_workers
# cluster.device=cpu: one reward worker. Each is a Python process of ~0.7 GB, and its judge calls are async HTTP, so one
# keeps judge.concurrency calls in flight; 8 of them put the tiny policy job at 21 of 23 GB on a 24 GB machine, where
# Ray's memory monitor (95%) starts killing workers and every rollout group of a step fails
CPU_REWARD_WORKERS = 1
RULE_FUNCTION = "rule_compute_score"


# --------------------------------------------------------------------------- data


def policy_rows(prompts: Sequence[PolicyPrompt], *, reward_name: str, split: str, data_source: str) -> list[dict[str, Any]]:
    """verl RL rows (the parquet's records) for `prompts` (module docstring)."""
    return [
        {
            "data_source": data_source,
            "prompt": [{"role": m["role"], "content": m["content"]} for m in p.chat()],
            "ability": ABILITY,
            "reward_model": {"style": "rule", "ground_truth": json.dumps(p.to_dict(), sort_keys=True)},
            "extra_info": {"index": i, "prompt_id": p.prompt_id, "reward_name": reward_name, "split": split},
        }
        for i, p in enumerate(prompts)
    ]


def validation_prompts(job: PolicyJobConfig, train: Sequence[PolicyPrompt]) -> list[PolicyPrompt]:
    d = job.policy_data
    if d.source == "generated":
        from judge_rl.policy.tasks.prompts import generate_policy_prompts

        return generate_policy_prompts(min(VAL_PROMPTS, d.n_train), seed=d.seed, split="test",
                                       min_constraints=d.min_constraints, max_constraints=d.max_constraints)  # fmt: skip
    return list(train[:VAL_PROMPTS])


def export_policy_data(job: PolicyJobConfig, out_dir: str | Path) -> dict[str, str]:
    """Write `train.parquet` and `val.parquet` for verl under `out_dir`; returns verl_config's `data_files`.
    Prompts over the policy's prompt budget are not dropped here: the translated config sets
    data.filter_overlong_prompts and verl drops them by token count."""
    train = load_policy_prompts(job)
    out = Path(out_dir)
    files = {}
    for split, prompts in (("train", train), ("val", validation_prompts(job, train))):
        rows = policy_rows(prompts, reward_name=job.policy_reward.name, split=split,
                           data_source=f"policy/{job.policy_data.name}/{split}")  # fmt: skip
        path = out / f"{split}.parquet"
        write_rl_parquet(rows, path, EXTRA_INFO)
        files[split] = str(path.resolve())
    return files


def read_policy_prompts(path: str | Path) -> list[PolicyPrompt]:
    """The prompts of an exported parquet, back from each row's ground truth."""
    import pyarrow.parquet as pq

    from judge_rl.policy.verl.reward import prompt_from_ground_truth

    return [prompt_from_ground_truth(r["ground_truth"]) for r in pq.read_table(path).column("reward_model").to_pylist()]


# --------------------------------------------------------------------------- the reward's settings


def needs_judge(job: PolicyJobConfig) -> bool:
    return POLICY_REWARDS.get(job.policy_reward.name).needs_judge


def planned_judge_base_url(judge: RewardJudgeConfig) -> str:
    """judge.base_url, or where the job will start its judge (127.0.0.1:judge.port, or 8011 with judge.port=null;
    the port a job picks, and a local judge's, is only known once it listens, so a dry run shows this one)."""
    from judge_rl.servers.endpoint import PORT_BASE

    return judge.base_url or f"http://127.0.0.1:{judge.port or PORT_BASE}/v1"


def reward_workers(judge: RewardJudgeConfig, device: str) -> tuple[int, int]:
    """(reward.num_workers, judge calls in flight per worker): about judge.concurrency calls in all; one worker on
    cluster.device=cpu (CPU_REWARD_WORKERS)."""
    workers = max(1, min(CPU_REWARD_WORKERS if device == "cpu" else VERL_REWARD_WORKERS, judge.concurrency))
    return workers, math.ceil(judge.concurrency / workers)


def reward_timeout(judge: RewardJudgeConfig) -> float:
    """reward.timeout per sample: four times the client's worst case for one call (every attempt timing out,
    every backoff slept), at least 300 s."""
    one_call = (judge.max_retries + 1) * judge.timeout_s + judge.backoff_s * (2**judge.max_retries - 1)
    return float(max(300.0, 4 * one_call))


def policy_reward_kwargs(job: PolicyJobConfig, judge_base_url: str | None, judge_model: str | None = None,
                         concurrency: int | None = None) -> dict[str, Any]:  # fmt: skip
    """reward.custom_reward_function.reward_kwargs for the policy's reward (judge_rl/policy/verl/reward.py reads
    them). `concurrency`: the judge calls in flight per reward worker (None: judge.concurrency)."""
    from dataclasses import asdict

    from judge_rl.policy.verl.reward import JUDGE_CLIENT_FIELDS
    from judge_rl.servers.endpoint import served_name

    r = job.policy_reward
    if not needs_judge(job):
        return {"level": r.level, "guard": r.guard}
    if not judge_base_url:
        raise VerlTranslationError(f"policy_reward={r.name} asks a judge: its base_url is needed for verl's reward workers")
    j = job.judge
    values = {f"reward_{k}": v for k, v in asdict(r).items()}
    values.update({f"judge_{k}": getattr(j, k) for k in JUDGE_CLIENT_FIELDS})
    values["judge_extra_body"] = dict(j.extra_body)
    values.update(judge_base_url=str(judge_base_url), judge_model=judge_model or served_name(j))
    if concurrency is not None:
        values["judge_concurrency"] = int(concurrency)
    return values


def policy_reward_keys(job: PolicyJobConfig, judge_base_url: str | None, judge_model: str | None = None) -> dict[str, Any]:
    """The verl keys the policy's reward sets besides reward_kwargs (module docstring)."""
    if not needs_judge(job):
        return {"reward.custom_reward_function.name": RULE_FUNCTION}
    from judge_rl.policy.verl.reward_manager import MANAGER_NAME, MODULE_PATH

    workers, per_worker = reward_workers(job.judge, job.cluster.device)
    return {
        "reward.reward_manager.source": "importlib",
        "reward.reward_manager.name": MANAGER_NAME,
        "reward.reward_manager.module.path": MODULE_PATH,
        "reward.num_workers": workers,
        "reward.max_concurrent": per_worker,
        "reward.timeout": reward_timeout(job.judge),
        # trainer.use_v1 (a sample whose reward raised leaves the batch; the v0 trainer would crash) and the replay
        # buffer that refills a group with no graded sample are set for every job (translate.refill_values)
    }


def reward_module_file() -> str:
    """The file verl loads the reward function from (reward.custom_reward_function.path), for every reward."""
    import judge_rl.policy.verl.reward as module

    return str(Path(module.__file__).resolve())


# --------------------------------------------------------------------------- the task


def policy_verl_task(job: PolicyJobConfig, run_dir: Path, judge_base_url: str | None, judge_model: str | None = None) -> VerlTask:
    """What the policy's reward adds to a verl launch (module docstring): its prompts exported under
    <run_dir>/verl/data, the reward function, its kwargs and manager keys, and for a judge-graded reward the file the
    reward workers write each sample's outcome to (reward_outcomes.py) and the judge key's variable NAME, both
    forwarded to Ray's workers (a secret's value by inheritance only: entry.py). judge_base_url: the judge's OpenAI-compatible URL as Ray's reward workers reach it
    (None only for policy_reward=rule); judge_model: the model id requests carry (None: the judge's served name,
    judge_rl/servers/endpoint.py `served_name`)."""
    judged = needs_judge(job)
    if judged and job.judge_failure.mode != "mask":
        raise VerlTranslationError(
            f"judge_failure.mode={job.judge_failure.mode}: on verl 0.9.1 a failed sample leaves the batch (mask) but a "
            "group left with fewer than judge_failure.min_group_size graded samples cannot be dropped; use "
            "judge_failure.mode=mask, or the local backend (cluster=local)"
        )
    _, per_worker = reward_workers(job.judge, job.cluster.device)
    return VerlTask(
        data_files=export_policy_data(job, Path(run_dir) / "verl" / "data"),
        reward_module=reward_module_file(),
        reward_kwargs=policy_reward_kwargs(job, judge_base_url, judge_model, per_worker if judged else None),
        stages=(),  # validation: none (module docstring)
        keys=policy_reward_keys(job, judge_base_url, judge_model),
        env={OUTCOMES_ENV: str((Path(run_dir) / "verl" / OUTCOMES_FILE).resolve())} if judged else {},
        forward=(job.judge.api_key_env,) if judged else (),
        judge=job.judge if judged else None,
    )


def policy_rl_task(job: PolicyJobConfig, judge_base_url: str | None = None, judge_model: str | None = None, *,
                   items: Sequence[PolicyPrompt] = (), make_step: Callable | None = None, eval_fn: Callable | None = None,
                   eval_at: Callable | None = None, describe: Callable | None = None) -> RLTask:  # fmt: skip
    """The policy job's RL as the backends take it (judge_rl/backends/__init__.py): on verl, `policy_verl_task`; on
    the local backend, `items` and the step `make_step` builds (judge_rl/jobs/policy.py: a PolicyBackend)."""
    return RLTask(reward_name=job.policy_reward.name, items=items, make_step=make_step,
                  verl_task=lambda run_dir: policy_verl_task(job, run_dir, judge_base_url, judge_model),
                  eval_fn=eval_fn, eval_at=eval_at, describe=describe)  # fmt: skip


def policy_dry_run(job: PolicyJobConfig, run_dir: Path) -> dict[str, Any]:
    """Everything a verl launch does (data exported, config translated, validated and written, preflight) but the
    launch; prints the command and the config. The judge's URL is judge.base_url or where the job would start it."""
    base_url = planned_judge_base_url(job.judge) if needs_judge(job) else None
    out = dry_run(job, Path(run_dir), policy_rl_task(job, base_url))
    if needs_judge(job) and not job.judge.base_url:
        console.print(f"(the judge's URL {base_url} is where the job starts it; a launch writes the real one)")
    return {**out, "judge_base_url": base_url}

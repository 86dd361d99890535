"""Grading a policy's samples: the configured reward, asking the judge over HTTP where it needs one.

    grader = Grader(job.policy_reward, judge_client(job.judge, endpoint.base_url, endpoint.model))
    graded = grader.grade_many(prompts, responses)      # one Graded per sample, calls concurrent
    graded[i].reward                                    # a PolicyReward: a score, or a failure (never both)

`Grader.grade(prompt, response)` is the async form verl's reward loop awaits (judge_rl/policy/verl/reward.py);
`grade_many` is the sync form the local backend calls once per step, so all of a step's judge calls are
in flight together (up to `judge.concurrency`) and the local server batches them.

Per reward (each reward's `grade` and exact score: judge_rl/policy/rewards/<name>.py; the grader only dispatches
through its registered spec):
  rule            the IFEval checkers alone; no judge call.
  rubric          one call per criterion (`batch_criteria=false`, HealthBench's grading; reply
                  `criterion_format` json or yesno) or one call for the whole rubric (`batch_criteria=true`,
                  reply `batch_format` json or lines); any failed criterion fails the sample.
  verif           the rule checkers; the judge is asked only when they all pass (otherwise the product is
                  0 whatever it says), once, on the soft constraints.
  judge_pairwise  the sample against the prompt's reference (or, `opponent=group`, the next sample of its group:
                  `group_prompts`) with a pairwise judge prompt, in both orders (`both_orders`) or with the sample
                  as (a).

Every call is recorded in the grader's `JudgeTelemetry` with the failure parsing found, so a step's
telemetry counts failures by reason per call, while `Graded.reward.failure` is the sample's.

`Graded` also carries what the bias metrics need (judge_rl/policy/bias.py): the judge-free rule score of
every sample whose prompt has checkers, and for rubric criteria tied to one IFEval instruction (tag
`instruction_id:<id>`), the judge's verdict beside the checker's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from concurrent.futures import Future
from dataclasses import replace
from typing import Iterator, Sequence

from judge_rl.aio import run_sync
from judge_rl.policy.config import PolicyRewardConfig, RewardJudgeConfig
from judge_rl.policy.tasks.prompts import PolicyPrompt
from judge_rl.policy.tasks.guard import guard_failure
from judge_rl.policy.rewards import POLICY_REWARDS, Graded, JudgeFailure, PolicyReward
from judge_rl.policy.rewards.rule import rule_checks
from judge_rl.servers.client import AsyncJudgeClient, JudgeReply, JudgeTelemetry

__all__ = ["Graded", "Grader", "judge_client"]

EMPTY_OPPONENT = "(no answer)"  # the opponent of a sample whose group answered nothing else


def judge_client(judge_cfg: RewardJudgeConfig, base_url: str, model: str) -> AsyncJudgeClient:
    """The HTTP client for the configured judge at `base_url` (the key is read from the environment variable
    `judge.api_key_env` at each request, never stored). An HTTP error's failure detail carries the server's own
    message (e.g. vLLM's "maximum context length is N tokens ..."; one line, the key masked), so a failed call
    says why in the step's samples."""
    template = None if judge_cfg.enable_thinking is None else {"enable_thinking": judge_cfg.enable_thinking}
    return AsyncJudgeClient(
        base_url,
        model,
        **judge_cfg.client_kwargs(),
        max_tokens=judge_cfg.max_tokens,
        temperature=judge_cfg.temperature,
        chat_template_kwargs=template,
        extra_body=dict(judge_cfg.extra_body),
        cache_size=judge_cfg.cache_size,
        error_messages=True,
    )


def true_checks(prompt: PolicyPrompt, response: str) -> list[bool]:
    """The checker results the bias metrics hold a judge to: IFEval's checkers, and for a generated prompt (one with
    a base task) none followed where the response fails the guard (judge_rl/policy/tasks/guard.py), the task's true score."""
    if not prompt.instruction_id_list:
        return []
    checks = rule_checks(prompt.instruction_id_list, prompt.kwargs, response)
    task_id = prompt.meta.get("task_id")
    if task_id is not None and guard_failure(response, task_id, prompt.instruction_id_list) is not None:
        return [False] * len(checks)
    return checks


class Grader:
    """Scores samples with the configured reward (module docstring). `client` is None only for `rule`."""

    def __init__(self, cfg: PolicyRewardConfig, client: AsyncJudgeClient | None, telemetry: JudgeTelemetry | None = None):
        self.spec = POLICY_REWARDS.get(cfg.name)
        if self.spec.needs_judge and client is None:
            raise ValueError(f"policy_reward={cfg.name} asks a judge: it needs a judge client")
        self.cfg = cfg
        self.client = client
        self.telemetry = telemetry if telemetry is not None else JudgeTelemetry()
        self.clip = None if cfg.clip is None else (float(cfg.clip[0]), float(cfg.clip[1]))

    @property
    def endpoint(self) -> str:
        return self.client.endpoint if self.client is not None else "(no judge)"

    # -- what a reward's `grade` calls (judge_rl/policy/rewards/<name>.py) ----------------------------
    async def ask(self, messages) -> JudgeReply:
        return await self.client.complete(messages)  # type: ignore[union-attr]

    @staticmethod
    def texts(replies: Sequence[JudgeReply]) -> list[str]:
        return [r.text if r.ok else f"<failed: {r.failure.reason}; {r.failure.detail}>" for r in replies]  # type: ignore[union-attr]

    def record(self, reply: JudgeReply, parsed) -> None:
        """One call into the telemetry, with the failure its parsing found (a reply that failed at the server
        carries its own)."""
        failure = parsed if isinstance(parsed, JudgeFailure) and reply.ok else None
        self.telemetry.record(reply, failure)

    def group_prompts(self, prompt: PolicyPrompt, responses: Sequence[str]) -> list[PolicyPrompt]:
        """The prompt each sample of one group is graded with: the prompt itself, or with
        `policy_reward.opponent=group` the prompt whose reference is the group's next non-blank sample (a ring)."""
        if self.cfg.opponent != "group":
            return [prompt] * len(responses)
        n = len(responses)
        out = []
        for j in range(n):
            after = [responses[(j + k) % n] for k in range(1, n)]
            opponent = next((r for r in after if r.strip()), EMPTY_OPPONENT)
            out.append(replace(prompt, reference=opponent))
        return out

    # -- one sample ---------------------------------------------------------------------------------
    async def grade(self, prompt: PolicyPrompt, response: str) -> PolicyReward:
        return (await self.grade_detailed(prompt, response)).reward

    async def grade_detailed(self, prompt: PolicyPrompt, response: str) -> Graded:
        """The sample graded by its reward's own `grade` (its spec), with the prompt's checker results."""
        return await self.spec.grade(self, prompt, response, true_checks(prompt, response))

    # -- many samples -------------------------------------------------------------------------------
    def grade_many(self, prompts: Sequence[PolicyPrompt], responses: Sequence[str]) -> list[Graded]:
        """Every sample graded, concurrently, from synchronous code (the connections of the event loop used
        are closed before returning)."""
        if len(prompts) != len(responses):
            raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")

        async def run() -> list[Graded]:
            try:
                return list(await asyncio.gather(*(self.grade_detailed(p, r) for p, r in zip(prompts, responses))))
            finally:
                if self.client is not None:
                    await self.client.aclose()

        return run_sync(run())

    @contextlib.contextmanager
    def stream(self) -> Iterator["GradingStream"]:
        """Grading that runs beside the caller: `stream.submit(prompts, responses)` starts those samples' judge calls
        at once on an event loop in a background thread and returns a future of their `Graded` list, so the policy
        job judges a group while other groups still generate. The loop's connections are closed on exit."""
        stream = GradingStream(self)
        try:
            yield stream
        finally:
            stream.close()


class GradingStream:
    """`Grader.stream()`'s background event loop (one thread): every submitted batch of samples is graded
    concurrently with the others and with the caller (calls capped by `judge.concurrency` on that loop)."""

    def __init__(self, grader: Grader):
        self.grader = grader
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="judge-stream", daemon=True)
        self.thread.start()
        self.first_submit: float | None = None  # perf_counter of the first submit, and of the last batch graded
        self.last_done: float | None = None

    def busy_s(self) -> float:
        """Seconds from the first submitted batch to the last one graded (0 before any was)."""
        if self.first_submit is None or self.last_done is None:
            return 0.0
        return max(0.0, self.last_done - self.first_submit)

    def submit(self, prompts: Sequence[PolicyPrompt], responses: Sequence[str]) -> "Future[list[Graded]]":
        """Start grading these samples now; the future holds their `Graded` list, in order."""
        if self.first_submit is None:
            self.first_submit = time.perf_counter()

        async def run() -> list[Graded]:
            graded = list(await asyncio.gather(*(self.grader.grade_detailed(p, r) for p, r in zip(prompts, responses))))
            self.last_done = time.perf_counter()  # before the future resolves: a caller that saw it done sees this
            return graded

        return asyncio.run_coroutine_threadsafe(run(), self.loop)

    def close(self) -> None:
        """Cancel what is still running, close the loop's connections, stop the thread. Idempotent."""
        if self.loop.is_closed():
            return

        async def shutdown() -> None:
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            if self.grader.client is not None:
                await self.grader.client.aclose()

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()

"""The models curation asks: the judge and the teacher.

`Judge` is the judge model (`model`, with `difficulty.checkpoint` weights when given), loaded once and shared by
the difficulty filter and the judge embedder. `Teacher` writes the accuracy filter's judgments: the data's gold
traces, an OpenAI-compatible server, or a local model directory run by the hf server; a server's answers are
saved in teacher.jsonl by request, so each request is asked once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from judge_rl.config import ModelConfig
from judge_rl.curate.config import CurateConfig
from judge_rl.curate.records import append_records, read_records
from judge_rl.data.pairs import JudgeItem


@dataclass
class Judge:
    """The judge model loaded once and shared by the difficulty filter and the judge embedder."""

    model: Any
    tokenizer: Any
    identity: str


def load_judge(job: CurateConfig) -> Judge:
    """The judge (`model`, with `difficulty.checkpoint` weights when given) and its identity (name + weights hash)."""
    from judge_rl.models.identity import weights_fingerprint
    from judge_rl.models.loading import load_model, load_tokenizer, resolve_device

    tokenizer = load_tokenizer(job.model, job.cache_dir)
    model = load_model(job.model, job.cache_dir, resolve_device(job.device), checkpoint=job.difficulty.checkpoint,
                       seed=job.seed)
    return Judge(model, tokenizer, f"{job.model.name}:{weights_fingerprint(model)}")


class Teacher:
    """Writes a judgment for each item: the gold trace, or a server's answer (saved in teacher.jsonl by request
    key, so it is asked once). `outputs(items)` returns, per item, (text, None) or (None, failure reason)."""

    def __init__(self, job: CurateConfig, prompt, records_path: Path):
        self.job = job
        self.acc = job.accuracy
        self.prompt = prompt
        self.records_path = records_path
        self.server = None
        self.saved = {r["key"]: r for r in read_records(records_path) if "key" in r and r.get("text") is not None}
        self.requests = 0
        self.reused = 0

    @property
    def name(self) -> str:
        if self.acc.teacher == "server":
            return f"server:{self.acc.server.base_url}:{self.acc.server.served_model}"
        if self.acc.teacher == "checkpoint":
            return f"checkpoint:{self.acc.checkpoint}"
        return "gold"

    def _server(self):
        if self.server is None:
            if self.acc.teacher == "server":
                from judge_rl.servers import OpenAIServer

                s = self.acc.server
                self.server = OpenAIServer(base_url=s.base_url, model=s.served_model, **s.client_kwargs())
            else:
                from judge_rl.servers import build_server

                path = str(Path(self.acc.checkpoint).expanduser())
                teacher_model = ModelConfig(name=f"teacher-{Path(path).name}", source="local", path=path,
                                            dtype=self.job.model.dtype)
                self.server = build_server(dataclasses.replace(self.acc.server, name="hf"), teacher_model,
                                           self.job.cache_dir, None, self.job.seed)
        return self.server

    def outputs(self, items: Sequence[JudgeItem]) -> list[tuple[str | None, str | None]]:
        if self.acc.teacher == "gold":
            return [(it.trace, None) if it.trace else (None, "no gold trace") for it in items]
        server = self._server()
        budget = self.acc.server.max_new_tokens
        messages = [self.prompt.messages(it) for it in items]
        keys = [server.request_key(m, budget) for m in messages]
        results: list[tuple[str | None, str | None]] = [(None, None)] * len(items)
        ask = []
        for i, key in enumerate(keys):
            if key in self.saved:
                results[i] = (self.saved[key]["text"], None)
                self.reused += 1
                continue
            too_long = getattr(server, "too_long", None)
            reason = too_long(messages[i], budget) if too_long is not None else None
            if reason is not None:
                results[i] = (None, f"teacher request failed: {reason}")
            else:
                ask.append(i)
        if ask:
            completions = server.complete([messages[i] for i in ask], max_new_tokens=budget)
            self.requests += len(ask)
            new = []
            for i, c in zip(ask, completions):
                if c.ok:
                    results[i] = (c.text, None)
                    record = {"key": keys[i], "pair_id": items[i].pair.pair_id, "position": items[i].chosen_position,
                              "text": c.text, "finished": c.finished}
                    self.saved[keys[i]] = record
                    new.append(record)
                else:
                    results[i] = (None, f"teacher request failed: {c.error}")
            append_records(self.records_path, new)
        return results

    def close(self) -> None:
        close = getattr(self.server, "close", None)
        if close is not None:
            close()

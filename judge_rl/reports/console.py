"""Console output shared by every stage: one rich console and progress bars that stages can nest."""

from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

import shutil

# Logs and CI are not terminals: rich would wrap tables at 80 columns and cut metric names.
console = Console(width=max(shutil.get_terminal_size((140, 40)).columns, 120))


def duration(seconds: float) -> str:
    """Seconds as a person reads a wait: "40 s", "6.5 min", "1.3 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def forecast_line(name: str, done: int, total: int, seconds_per_step: float,
                  then: list[tuple[str, float]] = ()) -> str:  # fmt: skip
    """What is left after step `done` of `total` at the rate of the first step(s) this process ran, and the work
    `then` ((what, seconds), ...) that follows: "rl: step 1 of 10 took 52 s; the rest ~9.6 min (9 steps ~7.8 min,
    evaluating the RL judge ~1.8 min)". The first step is the slowest one (warm-up), so it errs long."""
    steps = (total - done) * seconds_per_step
    parts = [f"{total - done} step{'s' if total - done > 1 else ''} ~{duration(steps)}", *(f"{what} ~{duration(s)}" for what, s in then)]
    rest = steps + sum(s for _, s in then)
    return (f"{name}: step {done} of {total} took {duration(seconds_per_step)}; the rest ~{duration(rest)}"
            + (f" ({', '.join(parts)})" if then else ""))


@contextlib.contextmanager
def progress_bar(description: str, total: int, lines: int = 0,
                 forecast: bool | Callable[[int], list[tuple[str, float]]] = False) -> Iterator[Callable[..., None]]:
    """Yields `advance(k=1, status=None, done_before=False)`: k more of `total` done (`done_before`: done by an earlier
    process, a resumed run's start), and `status` (e.g. "loss 0.412") shown beside the bar. The bar is transient so logs stay readable; where the console is not a terminal (a log file, CI) no bar
    is drawn, and with `lines` > 0 one plain line is printed about every total/lines steps and at the last one
    ("sft 8/16  loss 0.100  11.9 s/step"). `forecast`: after this process's first step, one line (terminal or not) of
    how long the other steps will take at its rate (`forecast_line`); a callable `forecast(step)` adds the work that
    follows them."""
    every = max(1, -(-total // lines)) if lines > 0 else 0
    state = {"done": 0, "start": time.perf_counter()}

    def line(k: int = 1, status: str | None = None, done_before: bool = False) -> None:
        before, state["done"] = state["done"], state["done"] + k
        if done_before:  # steps a resumed run had done: not in this process's rate
            state["resumed"] = state.get("resumed", 0) + k
            state["start"] = time.perf_counter()
            return
        if forecast and k > 0 and before == state.get("resumed", 0) and state["done"] < total:
            then = forecast(state["done"]) if callable(forecast) else []
            console.print(forecast_line(description, state["done"], total, (time.perf_counter() - state["start"]) / k,
                                        then), highlight=False, soft_wrap=True)
        if every and k > 0 and (state["done"] // every > before // every or state["done"] >= total):
            per_step = (time.perf_counter() - state["start"]) / max(1, state["done"] - state.get("resumed", 0))
            shown = f"  {status}" if status else ""
            console.print(f"{description} {state['done']}/{total}{shown}  {per_step:.1f} s/step", highlight=False)

    if not console.is_terminal:  # no live bar (rich would still print a blank line when one ends): lines only
        yield line
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total, status="")

        def advance(k: int = 1, status: str | None = None, done_before: bool = False) -> None:
            progress.update(task, advance=k, **({"status": status} if status is not None else {}))

        yield advance

"""Console output shared by every stage: one rich console and progress bars that stages can nest."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console()


@contextlib.contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """Yields `advance(k)`; the bar is transient so logs stay readable."""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)
        yield lambda k=1: progress.advance(task, k)

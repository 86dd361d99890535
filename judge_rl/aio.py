"""Running coroutines from synchronous code, for the HTTP client of judges (judge_rl/servers/client.py,
which judge_rl/servers/openai.py and the policy job's grader use). Kept free of torch so a reward worker imports it in milliseconds."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


def retryable_status(code: int) -> bool:
    """HTTP statuses worth retrying: rate limits (429) and server errors (5xx); other 4xx are the caller's."""
    return code == 429 or code >= 500


def run_on_new_loop(coro: Coroutine[Any, Any, T], thread_name: str = "judge-http") -> T:
    """Like `asyncio.run`, except that leftover executor work (a slow DNS lookup whose await was
    cancelled by a timeout) is not waited for on the way out."""
    loop = asyncio.new_event_loop()
    executor = ThreadPoolExecutor(thread_name_prefix=thread_name)
    loop.set_default_executor(executor)
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            executor.shutdown(wait=False)
            loop.close()


def run_sync(coro: Coroutine[Any, Any, T], thread_name: str = "judge-http") -> T:
    """`coro`'s result from synchronous code: on a fresh loop in this thread, or, when this thread already runs
    a loop (a notebook, an async caller) that cannot be re-entered, on a fresh loop in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: run one here
        return run_on_new_loop(coro, thread_name)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name) as pool:
        return pool.submit(run_on_new_loop, coro, thread_name).result()

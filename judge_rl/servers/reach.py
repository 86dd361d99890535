"""Whether anything answers at an address a job was given (a Ray cluster's GCS, Ray Client's server, a judge's
base_url), asked once with a bounded wait before the job starts work: a job pointed at nothing fails in one line
naming the key, where Ray retried "Failed to connect to GCS" for minutes and a judge client would fail call after
call. Only that a TCP connection is accepted is checked: what speaks behind it is the client's to find out."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

REACH_TIMEOUT_S = 5.0  # a connection on a LAN or to an API opens in milliseconds; a loaded machine's in well under 1 s
DEFAULT_PORTS = {"http": 80, "https": 443, "ray": 10001}  # ray://: Ray Client's default server port


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of `host:port`, `ray://host:port` or an http(s) URL (its scheme's port where none is given); None
    where `address` names no host (Ray's "auto", "local")."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if not host or (port is None and parts.scheme not in DEFAULT_PORTS):
        return None
    return host, port if port is not None else DEFAULT_PORTS[parts.scheme]


def unanswered(address: str, timeout_s: float = REACH_TIMEOUT_S) -> str | None:
    """None when something accepts a TCP connection at `address` within `timeout_s` (or `address` names no host:
    nothing to ask); otherwise what happened, in words ("connection refused", "no answer within 5 s", "unknown host")."""
    target = host_port(address)
    if target is None:
        return None
    try:
        with socket.create_connection(target, timeout=timeout_s):
            return None
    except socket.gaierror as e:
        return f"unknown host {target[0]!r} ({e.strerror})"
    except (socket.timeout, TimeoutError):
        return f"nothing accepted a connection to {target[0]}:{target[1]} within {timeout_s:g} s"
    except ConnectionRefusedError:
        return f"connection refused at {target[0]}:{target[1]} (nothing listens there)"
    except OSError as e:
        return f"{target[0]}:{target[1]}: {e.strerror or e}"


def check_reachable(key: str, address: str | None, what: str, timeout_s: float = REACH_TIMEOUT_S) -> list[str]:
    """[one line naming `key`] when nothing answers at `address` (`what`: what should be there), [] otherwise."""
    if not address:
        return []
    why = unanswered(address, timeout_s)
    return [f"{key}={address}: {why}; start {what} there or fix the address"] if why else []


def require_reachable(key: str, address: str | None, what: str) -> None:
    """check_reachable's line as a ValueError (a job's check before its run directory is claimed)."""
    problems = check_reachable(key, address, what)
    if problems:
        raise ValueError("; ".join(problems))

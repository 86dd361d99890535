"""An address a job is given answers, or the job fails at once in one line naming the key (judge_rl/servers/reach.py):
Ray's GCS, Ray Client's server, a judge's or a teacher's base_url (issue 55: a job pointed at nothing retried for more
than 10 minutes)."""

from __future__ import annotations

import socket

import pytest

from judge_rl.servers.reach import check_reachable, host_port, unanswered


def closed_port() -> int:
    with socket.socket() as s:  # bound, never listening: refused
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_host_and_port_of_each_address_form():
    assert host_port("10.0.0.5:6379") == ("10.0.0.5", 6379)
    assert host_port("ray://head:10001") == ("head", 10001) and host_port("ray://head") == ("head", 10001)
    assert host_port("https://api.openai.com/v1") == ("api.openai.com", 443)
    assert host_port("http://127.0.0.1:8000/v1") == ("127.0.0.1", 8000)
    assert host_port("auto") is None and host_port("local") is None  # Ray finds its own cluster: nothing to ask


def test_a_listening_port_answers_and_a_closed_one_is_named_in_one_line():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert unanswered(f"127.0.0.1:{server.getsockname()[1]}") is None
        assert check_reachable("judge.base_url", f"http://127.0.0.1:{server.getsockname()[1]}/v1", "x") == []
    port = closed_port()
    (line,) = check_reachable("cluster.ray_address", f"127.0.0.1:{port}", "the Ray head")
    assert line == (f"cluster.ray_address=127.0.0.1:{port}: connection refused at 127.0.0.1:{port} (nothing listens "
                    "there); start the Ray head there or fix the address")
    assert check_reachable("judge.base_url", None, "x") == []  # no address: nothing to check


def test_an_unknown_host_is_named():
    why = unanswered("http://judge.invalid:8000/v1")  # .invalid never resolves (RFC 2606)
    assert why is not None and why.startswith("unknown host 'judge.invalid'")


def test_the_wait_is_bounded(monkeypatch):
    """A host that never answers (a dropped SYN) is given up after the timeout; here the connect itself says so."""
    def never(address, timeout):
        raise socket.timeout("timed out")

    monkeypatch.setattr(socket, "create_connection", never)
    assert unanswered("10.1.2.3:6379", timeout_s=5) == "nothing accepted a connection to 10.1.2.3:6379 within 5 s"


@pytest.mark.parametrize("key, address", [("cluster.ray_address", "127.0.0.1:{port}"),
                                          ("cluster.ray_address", "ray://127.0.0.1:{port}"),
                                          ("RAY_ADDRESS", "127.0.0.1:{port}")])
def test_verls_launch_checks_its_ray_cluster_answers(key, address):
    from judge_rl.backends.verl.preflight import check_addresses_answer
    from judge_rl.config import ClusterConfig
    from judge_rl.policy.config import RewardJudgeConfig

    address = address.format(port=closed_port())
    cluster = ClusterConfig(backend="verl", ray_address=address if key == "cluster.ray_address" else None)
    env = {"RAY_ADDRESS": address}  # the launch environment carries cluster.ray_address as RAY_ADDRESS
    judge = RewardJudgeConfig(engine="openai", base_url=f"http://127.0.0.1:{closed_port()}/v1")
    ray_line, judge_line = check_addresses_answer(cluster, judge, env)
    assert ray_line.startswith(f"{key}={address}: connection refused") and "Ray" in ray_line
    assert judge_line.startswith("judge.base_url=http://127.0.0.1:") and "the judge's server" in judge_line

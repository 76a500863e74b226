"""Fixtures of the LLM tests: the loopback server, a client on it, and the network guard.

The guard (`no_outside_network`, autouse in every LLM test module) replaces `socket.connect`
and name resolution so that any attempt to reach an address other than 127.0.0.1/::1 raises and
is remembered; each test then asserts that none was made. This is how the tests prove that no
call leaves the machine.
"""
from __future__ import annotations

import ipaddress
import socket

import pytest

from loopback import LoopbackServer
from nader.agents.llm import LLMClient, LLMConfig

FAST = dict(backoff_base=0.01, backoff_max=0.05, request_timeout=5.0, deadline=20.0)


class OutsideNetwork(ConnectionRefusedError):
    """Raised in place of an outside connection: to the HTTP stack it is a refused connection,
    and the attempt is remembered for the test's final assertion."""


def _is_loopback(host) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_outside_network(monkeypatch):
    attempts: list = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(address):
        if isinstance(address, tuple) and not _is_loopback(address[0]):
            attempts.append(address)
            raise OutsideNetwork(f"a connection to {address} was attempted")

    def connect(self, address):
        check(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and not _is_loopback(host if isinstance(host, str) else host.decode()):
            attempts.append(host)
            raise OutsideNetwork(f"the name {host!r} was looked up")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts
    assert attempts == [], f"calls tried to leave the machine: {attempts}"


@pytest.fixture
def server():
    with LoopbackServer() as srv:
        yield srv


def make_client(server, run_dir=None, **settings) -> LLMClient:
    config = LLMConfig(base_url=server.base_url, model=settings.pop("model", "local-model"), **{**FAST, **settings})
    return LLMClient.from_config(config, store=run_dir)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]

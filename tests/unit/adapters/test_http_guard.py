"""Host and Origin matching of the HTTP guard: loopback names, configured names, ports."""

from __future__ import annotations

import pytest

from clarion.adapters.http_guard import HostAllowlist

ALLOWED = HostAllowlist.of(["clarion.example.com", "Proxy.Example:443", "[fd00::1]:8443"])


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.0.0.1:8765",
        "localhost",
        "LocalHost:1",
        "[::1]",
        "[::1]:8765",
        "clarion.example.com",
        "CLARION.example.com:9999",
        "[FD00::1]:8443",
    ],
)
def test_allowed_hosts(host: str) -> None:
    assert ALLOWED.allows(host, default_port=80)


@pytest.mark.parametrize(
    "host",
    [
        "",
        "attacker.example",
        "127.0.0.1.attacker.example",
        "localhost.attacker.example:8765",
        "clarion.example.com.attacker.example",
        "proxy.example",  # default port 80 is not 443
        "proxy.example:80",
        "[fd00::1]",
        "[fd00::1]:8444",
        "[::1",
        "localhost:",
        "localhost:0",
        "localhost:99999",
        "localhost:80:80",
        ":8765",
    ],
)
def test_refused_hosts(host: str) -> None:
    assert not ALLOWED.allows(host, default_port=80)


def test_a_bare_host_is_the_default_port_of_the_scheme() -> None:
    assert ALLOWED.allows("proxy.example", default_port=443)
    assert not ALLOWED.allows("proxy.example", default_port=80)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://127.0.0.1:8765", True),
        ("HTTP://LOCALHOST:3000", True),
        ("https://proxy.example", True),
        ("http://proxy.example", False),
        ("https://proxy.example:443", True),
        ("https://clarion.example.com:8443", True),
        ("null", False),
        ("file://", False),
        ("chrome-extension://abc", False),
        ("http://127.0.0.1:8765/path", False),
        ("http://attacker.example", False),
    ],
)
def test_origins(origin: str, allowed: bool) -> None:
    assert ALLOWED.allows_origin(origin) is allowed


@pytest.mark.parametrize("entry", ["https://x.example", "x.example:http", "x.example/", "", "[::1"])
def test_a_malformed_entry_is_refused_naming_it(entry: str) -> None:
    with pytest.raises(ValueError, match="allowed host") as caught:
        HostAllowlist.of([entry])
    assert repr(entry) in str(caught.value)

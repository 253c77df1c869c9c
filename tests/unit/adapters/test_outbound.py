"""Outbound HTTP to user-chosen destinations (issue #29 S2, S4): internal addresses refused
unless allowed, checked on the address connected to, no redirects, one deadline for the whole
attempt, and at most a small cap of the answer read — against real loopback servers."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpcore2
import httpx2
import pytest

from clarion.adapters.outbound import (
    OutboundPolicy,
    OutboundRefused,
    OutboundUnresolved,
    is_internal,
    send,
    system_tls,
)

pytestmark = pytest.mark.anyio

LOOPBACK = OutboundPolicy.allow_loopback()


class _Sink:
    """A loopback HTTP server: ``/ok`` answers 204, ``/redirect`` 302 to ``/ok``, ``/huge``
    streams 50 MB, ``/trickle`` one byte a second; it records each request's path and Host."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.huge_written = 0
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                sink.seen.append((self.path, self.headers.get("Host", "")))
                # The client may go away: that is the point of the cap and the deadline.
                with contextlib.suppress(OSError):
                    self._answer()

            def _answer(self) -> None:
                if self.path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", f"http://127.0.0.1:{sink.port}/ok")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif self.path == "/huge":
                    self.send_response(200)
                    self.send_header("Content-Length", str(50 * 1024 * 1024))
                    self.end_headers()
                    chunk = b"x" * 65536
                    for _ in range(800):
                        self.wfile.write(chunk)
                        sink.huge_written += len(chunk)
                elif self.path == "/trickle":
                    self.send_response(200)
                    self.send_header("Content-Length", "100")
                    self.end_headers()
                    for _ in range(100):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(1)
                else:
                    self.send_response(204)
                    self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]

    def __enter__(self) -> _Sink:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wrap(self, context: ssl.SSLContext) -> None:
        """Serve TLS from now on (before the first request)."""
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@pytest.fixture(name="sink")
def fixture_sink() -> Iterator[_Sink]:
    with _Sink() as sink:
        yield sink


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "240.0.0.1",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::7f00:1",
        "2002:7f00:1::1",
    ],
)
def test_internal_addresses_are_internal(address: str) -> None:
    """#29 S4: loopback, private, link-local, CGNAT, unspecified, multicast, reserved and the
    same inside IPv4-mapped, NAT64 and 6to4 addresses."""
    assert is_internal(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_are_not(address: str) -> None:
    assert not is_internal(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "0x7f000001",
        "2130706433",
        "127.1",
        "0177.0.0.1",
        "[::1]",
        "localhost",
        "api.localhost",
        "metadata.google.internal",
        "169.254.169.254",
        "[::ffff:7f00:1]",
    ],
)
async def test_internal_destinations_are_refused_by_default(host: str) -> None:
    """#29 S4: numeric spellings are judged by what they resolve to; internal names are
    refused even where they do not resolve."""
    with pytest.raises(OutboundRefused, match="CLARION_OUTBOUND_ALLOW"):
        await OutboundPolicy().resolve(host, 80)


async def test_the_setting_allows_networks_and_names() -> None:
    policy = OutboundPolicy.parse("10.0.0.0/8, 127.0.0.1 ,hooks.internal")
    assert str(await policy.resolve("127.0.0.1", 80)) == "127.0.0.1"
    assert str(await policy.resolve("0x7f000001", 80)) == "127.0.0.1"
    assert str(await policy.resolve("[::ffff:10.1.2.3]", 80)) == "::ffff:a01:203"
    with pytest.raises(OutboundRefused):
        await policy.resolve("[::1]", 80)
    with pytest.raises(OutboundUnresolved):
        await policy.resolve("hooks.internal", 80)  # allowed by name, but it does not resolve


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "ex ample", "a..b", "http://x"])
def test_a_bad_setting_entry_is_an_error_naming_it(entry: str) -> None:
    with pytest.raises(ValueError, match="CLARION_OUTBOUND_ALLOW"):
        OutboundPolicy.parse(f"127.0.0.1,{entry}")


@pytest.mark.server
async def test_a_loopback_destination_is_refused_before_connecting(sink: _Sink) -> None:
    """#29 S4: nothing reaches an internal address the operator did not allow."""
    with pytest.raises(OutboundRefused):
        await send("POST", sink.url("/ok"), policy=OutboundPolicy())
    assert sink.seen == []
    assert (await send("POST", sink.url("/ok"), policy=LOOPBACK)).status == 204


@pytest.mark.server
async def test_the_checked_address_is_connected_with_the_original_host(sink: _Sink) -> None:
    """#29 S4: the connection goes to the resolved, checked address, and the request still
    names the host the URL gave."""
    response = await send("POST", sink.url("/ok", host="localhost"), policy=LOOPBACK)
    assert response.status == 204
    assert sink.seen == [("/ok", f"localhost:{sink.port}")]


@pytest.mark.server
async def test_the_system_tls_context_is_built_once_and_still_verifies(
    sink: _Sink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#35: building the default TLS context reads the whole certificate store (about 20 ms of
    CPU); every delivery shares one, which still requires a certificate valid for the host."""
    built: list[ssl.SSLContext] = []
    real = httpcore2.default_ssl_context

    def counting(**kwargs: bool) -> ssl.SSLContext:
        built.append(real(**kwargs))
        return built[-1]

    monkeypatch.setattr(httpcore2, "default_ssl_context", counting)
    system_tls.cache_clear()
    for _ in range(3):
        assert (await send("POST", sink.url("/ok"), policy=LOOPBACK)).status == 204
    assert len(built) == 1
    context = system_tls()
    assert context is system_tls()
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)


@pytest.mark.server
async def test_redirects_are_never_followed(sink: _Sink) -> None:
    """#29 S4: a 3xx is just a status; its Location is never requested."""
    response = await send("POST", sink.url("/redirect"), policy=LOOPBACK)
    assert response.status == 302
    assert [path for path, _ in sink.seen] == ["/redirect"]


@pytest.mark.server
async def test_at_most_the_cap_of_an_answer_is_read(sink: _Sink) -> None:
    """#29 S2: a 50 MB answer is read up to the cap and the connection closed."""
    response = await send("POST", sink.url("/huge"), policy=LOOPBACK, max_bytes=64 * 1024)
    assert response.status == 200
    assert len(response.body) == 64 * 1024
    assert response.truncated
    assert sink.huge_written < 50 * 1024 * 1024


@pytest.mark.server
async def test_the_deadline_covers_the_whole_attempt(sink: _Sink) -> None:
    """#29 S2: a destination that answers one byte a second (each read well within any
    per-read timeout) is cut off at the deadline of the whole attempt."""
    with pytest.raises(TimeoutError):
        await send("POST", sink.url("/trickle"), policy=LOOPBACK, deadline_s=2)


def _tls_files(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for the name ``localhost`` only (no IP address in it), and
    its key."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.mark.server
async def test_https_connects_to_the_checked_address_and_verifies_the_name(
    sink: _Sink, tmp_path: Path
) -> None:
    """#29 S4: over TLS the connection goes to the checked address while the server name
    (SNI) and the certificate check use the URL's name: a certificate for ``localhost`` is
    accepted for https://localhost/ and refused for https://127.0.0.1/."""
    cert_path, key_path = _tls_files(tmp_path)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert_path, key_path)
    sink.wrap(server_side)
    client_side = ssl.create_default_context(cafile=str(cert_path))
    response = await send(
        "POST", f"https://localhost:{sink.port}/ok", policy=LOOPBACK, tls=client_side
    )
    assert response.status == 204
    assert sink.seen == [("/ok", f"localhost:{sink.port}")]
    with pytest.raises(httpx2.ConnectError):
        await send("POST", f"https://127.0.0.1:{sink.port}/ok", policy=LOOPBACK, tls=client_side)


def _resolving(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """Make ``anyio.getaddrinfo`` answer ``answers`` (names nobody else resolves); returns the
    names it was asked for, in order."""
    asked: list[str] = []

    async def fake(host: str, port: int, **_: object) -> list[tuple[object, ...]]:
        asked.append(host)
        if host not in answers:
            raise OSError(f"unknown name {host}")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers[host]]

    monkeypatch.setattr(anyio, "getaddrinfo", fake)
    return asked


@pytest.mark.server
async def test_the_name_is_resolved_once_and_that_address_connected(
    sink: _Sink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#29 S4 (DNS rebinding): the connection goes to the address the check saw — the HTTP
    client does not resolve the name again (it could not: only the check's resolver knows
    it)."""
    asked = _resolving(monkeypatch, {"hooks.test": ["127.0.0.1"]})
    response = await send("POST", sink.url("/ok", host="hooks.test"), policy=LOOPBACK)
    assert response.status == 204
    assert asked == ["hooks.test"]
    assert sink.seen == [("/ok", f"hooks.test:{sink.port}")]


@pytest.mark.server
async def test_a_name_with_any_internal_address_is_refused(
    sink: _Sink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#29 S4: one public and one internal address is refused, whichever comes first."""
    _resolving(monkeypatch, {"mixed.test": ["93.184.215.14", "169.254.169.254"]})
    with pytest.raises(OutboundRefused, match=r"169\.254\.169\.254"):
        await send("POST", sink.url("/ok", host="mixed.test"), policy=LOOPBACK)
    assert sink.seen == []


async def test_an_internal_name_is_judged_by_its_addresses_when_it_resolves() -> None:
    """#29 S4: ``localhost`` passes when every address it resolves to is allowed; a name under
    ``.internal`` that does not resolve here is refused, not let through as unresolved."""
    policy = OutboundPolicy.parse("127.0.0.0/8,::1")
    assert (await policy.resolve("localhost", 80)).is_loopback
    with pytest.raises(OutboundRefused):
        await policy.resolve("metadata.google.internal", 80)
    with pytest.raises(OutboundRefused):
        OutboundPolicy().resolve_now("localhost", 80)

"""Fixtures for the web inbox in a real headless Chromium (Debian's ``chromium``, installed by
``scripts/ensure-chromium.sh``; Playwright drives it and never downloads a browser).

One Clarion with authentication disabled serves the whole package; tests that need a clean
inbox or authentication get their own server. Every page is watched: an uncaught script error,
a console error other than the browser's own report of an HTTP error status, or a request to
any origin but Clarion's fails the test that caused it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, expect, sync_playwright

from tests.e2e.actors import AgentSession, Rest
from tests.e2e.server import ServedClarion, serve_clarion

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1000, "height": 900}
# The browser reports every 4xx/5xx response and refused event stream on the console; the page
# handles those itself, so they are expected, not errors.
_EXPECTED_CONSOLE = ("Failed to load resource", "EventSource's response has")

expect.set_options(timeout=10_000)


def _sqlite_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'clarion.db'}"


@pytest.fixture(name="playwright", scope="package")
def fixture_playwright() -> Iterator[Playwright]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run `bash scripts/ensure-chromium.sh` (as root)")
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(name="browser", scope="package")
def fixture_browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture(name="clarion", scope="package")
def fixture_clarion(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedClarion]:
    """The shared server: authentication disabled, a temporary SQLite database."""
    with serve_clarion(
        _sqlite_url(tmp_path_factory.mktemp("clarion")), auth_enabled=False
    ) as served:
        yield served


@pytest.fixture(name="fresh_clarion")
def fixture_fresh_clarion(tmp_path: Path) -> Iterator[ServedClarion]:
    """A server of this test's own, whose inbox starts empty."""
    with serve_clarion(_sqlite_url(tmp_path), auth_enabled=False) as served:
        yield served


@pytest.fixture(name="clarion_with_auth")
def fixture_clarion_with_auth(tmp_path: Path) -> Iterator[ServedClarion]:
    """A server of this test's own with authentication enabled."""
    with serve_clarion(_sqlite_url(tmp_path), auth_enabled=True) as served:
        yield served


PageFactory = Callable[..., Page]


@pytest.fixture(name="open_page")
def fixture_open_page(browser: Browser) -> Iterator[PageFactory]:
    """Open the inbox of a server in a new browser context (its own cookies); with
    ``navigate=False`` the page is left blank so a test can route requests first."""
    contexts = []
    problems: list[str] = []

    def open_page(
        served: ServedClarion, *, viewport: dict[str, int] | None = None, navigate: bool = True
    ) -> Page:
        context = browser.new_context(viewport=viewport or DESKTOP)  # type: ignore[arg-type]
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)

        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error" and not message.text.startswith(_EXPECTED_CONSOLE):
                problems.append(f"console: {message.text}")

        page.on("console", on_console)
        page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
        page.on(
            "request",
            lambda request: (
                None
                if request.url.startswith(served.base_url)
                else problems.append(f"foreign request: {request.url}")
            ),
        )
        if navigate:
            page.goto(served.url("/"))
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert problems == []


@pytest.fixture(name="page")
def fixture_page(open_page: PageFactory, clarion: ServedClarion) -> Page:
    """The shared server's inbox, open in a desktop-sized window."""
    return open_page(clarion)


@pytest.fixture(name="rest")
def fixture_rest(clarion: ServedClarion) -> Rest:
    return Rest(clarion.base_url)


@pytest.fixture(name="agent_session")
def fixture_agent_session(rest: Rest, request: pytest.FixtureRequest) -> Iterator[AgentSession]:
    """A running agent session on the shared server, ended after the test so none of its
    bundles is left pending for the next one."""
    session = rest.agent_session(f"Task of {request.node.name}")
    yield session
    rest.finish(session)

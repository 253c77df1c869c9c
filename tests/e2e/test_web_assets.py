"""The inbox's routes and assets, checked without a browser: everything the page loads is
served by Clarion itself, from package data, with headers that forbid any other origin."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from clarion.adapters.web import STATIC_PATH, web_routes

# The page refers to its assets relative to itself (it may be mounted under a prefix).
_REFERENCE = re.compile(r"""(?:src|href)="(static/[^"]*)\"""")
_IMPORT = re.compile(r"""^import .* from "\./([\w-]+\.js)";$""", re.MULTILINE)
_EXTERNAL = re.compile(r"""(?:https?:)?//[\w.-]+\.[a-z]{2,}""", re.IGNORECASE)
_SVG_NAMESPACE = "http://www.w3.org/2000/svg"


@pytest.fixture(name="client")
def fixture_client() -> Iterator[TestClient]:
    with TestClient(Starlette(routes=web_routes())) as client:
        yield client


def _assets(client: TestClient) -> dict[str, str]:
    """Every asset the page loads, found by following the page's references and every
    module's imports."""
    page = client.get("/").text
    queue = [f"/{path}" for path in _REFERENCE.findall(page)]
    seen: dict[str, str] = {}
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        response = client.get(path)
        assert response.status_code == 200, path
        seen[path] = response.text
        if path.endswith(".js"):
            queue.extend(f"{STATIC_PATH}/{name}" for name in _IMPORT.findall(response.text))
    return seen


def test_the_routes_claim_only_the_page_and_the_static_prefix() -> None:
    assert [getattr(route, "path", None) for route in web_routes()] == ["/", STATIC_PATH]


def test_the_page_forbids_every_origin_but_clarion(client: TestClient) -> None:
    response = client.get("/")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    for directive in ("script-src", "style-src", "img-src", "connect-src"):
        assert f"{directive} 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"


def test_every_asset_is_served_by_clarion_with_its_media_type(client: TestClient) -> None:
    assets = _assets(client)

    kinds = {path.rsplit(".", 1)[-1] for path in assets}
    assert kinds == {"js", "css", "svg"}
    assert f"{STATIC_PATH}/main.js" in assets
    assert f"{STATIC_PATH}/card.js" in assets
    for path in assets:
        media_type = client.get(path).headers["content-type"]
        expected = {
            "js": ("text/javascript", "application/javascript"),
            "css": ("text/css",),
            "svg": ("image/svg+xml",),
        }[path.rsplit(".", 1)[-1]]
        assert media_type.startswith(expected), (path, media_type)


def test_the_page_and_its_api_calls_use_paths_relative_to_the_page(client: TestClient) -> None:
    """Absolute paths would break the inbox when a host mounts Clarion under a prefix."""
    page = client.get("/").text
    assert re.findall(r"""(?:src|href)="/""", page) == []
    api = client.get(f"{STATIC_PATH}/api.js").text
    assert re.findall(r"""["`]/api/""", api) == []


def test_no_asset_refers_to_another_origin(client: TestClient) -> None:
    page = client.get("/").text
    for path, text in {"/": page, **_assets(client)}.items():
        assert _EXTERNAL.findall(text.replace(_SVG_NAMESPACE, "")) == [], path


def test_an_unknown_asset_is_a_404(client: TestClient) -> None:
    assert client.get(f"{STATIC_PATH}/missing.js").status_code == 404
    assert client.get(f"{STATIC_PATH}/%2e%2e/routes.py").status_code == 404

"""Issue #31: the MCP App card's HTML is built from its template and the inbox's stylesheet."""

from __future__ import annotations

import importlib.resources

import pytest

from clarion.adapters.mcp.app_card import _themed, card_html


def _inbox_css() -> str:
    path = importlib.resources.files("clarion") / "adapters" / "web" / "static" / "inbox.css"
    return path.read_text("utf-8")


def test_the_card_inlines_the_inbox_stylesheet_with_both_palettes_selectable() -> None:
    html = card_html()
    assert _inbox_css() in html
    light = html.split(':root[data-theme="light"] {', 1)[1].split("}", 1)[0]
    dark = html.split(':root[data-theme="dark"] {', 1)[1].split("}", 1)[0]
    assert "--card: #ffffff;" in light
    assert "--accent: #2456a6;" in light
    assert "--card: #181c22;" in dark
    assert "--accent: #5b8def;" in dark
    assert "<script>" in html
    assert "<link" not in html


@pytest.mark.parametrize(
    "stylesheet",
    [
        ":root {\n  --bg: #fff;\n}\n",  # no dark palette
        "@media (prefers-color-scheme: dark) {\n  :root {\n    --bg: #000;\n  }\n}\n",  # no light
    ],
)
def test_a_stylesheet_without_both_palettes_is_refused(stylesheet: str) -> None:
    with pytest.raises(ValueError, match="the light :root block or the dark palette is missing"):
        _themed(stylesheet)

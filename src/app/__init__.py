"""The application: its use cases (one sub-package, one ring) and its outermost ring (another).

``from clarion.app import build_clarion, Settings`` is the embedding entry point. The names are
loaded on first use, so importing :mod:`clarion.app` builds nothing and pulls in no adapter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clarion.app.root.compose import Clarion, build_clarion
    from clarion.app.root.settings import Settings

__all__ = ["Clarion", "Settings", "build_clarion"]


def __getattr__(name: str) -> Any:
    if name in ("Clarion", "build_clarion"):
        from clarion.app.root import compose

        return getattr(compose, name)
    if name == "Settings":
        from clarion.app.root.settings import Settings

        return Settings
    raise AttributeError(f"module 'clarion.app' has no attribute {name!r}")

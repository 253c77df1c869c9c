"""What the administrative commands work with, each over the one storage opener
(:func:`~clarion.app.root.storage.opened_storage`): migrated first, no SQLite file lock (they
serve and recover nothing, so they may run next to the serving process), closed after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.root.settings import Settings
from clarion.app.root.storage import Storage, opened_storage
from clarion.app.root.wings.notifications import configured_channels, route_management
from clarion.app.usecases.approvals import Groups
from clarion.app.usecases.auth import Authentication
from clarion.app.usecases.notification_routes import NotificationRouting
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.slack import SlackLinks
from clarion.ports.claims import ClaimRepository
from clarion.ports.notifications import NotificationStore


@contextmanager
def administration(settings: Settings) -> Iterator[Authentication]:
    """Users and tokens (``clarion users``, ``clarion tokens``)."""
    with opened_storage(settings) as storage:
        yield Authentication(storage.tokens, SystemClock(), UuidIds())


@contextmanager
def route_administration(settings: Settings) -> Iterator[NotificationRouting]:
    """Notification routes for ``clarion notify`` (the operator is unscoped: it manages every
    route)."""
    with opened_storage(settings) as storage:
        store = _notification_store(storage)
        yield route_management(settings, storage, store, Runner(), configured_channels(settings))


@contextmanager
def group_administration(settings: Settings) -> Iterator[Groups]:
    """The groups approvals are assigned to (``clarion groups``; the operator is unscoped: it
    manages every group)."""
    with opened_storage(settings) as storage:
        yield Groups(groups=storage.groups, users=storage.tokens, runner=Runner())


@contextmanager
def slack_links(settings: Settings) -> Iterator[SlackLinks]:
    """Slack accounts linked to users (``clarion users link-slack|unlink-slack|slack-links``)."""
    with opened_storage(settings) as storage:
        yield SlackLinks(_notification_store(storage), storage.tokens)


@contextmanager
def audit_records(settings: Settings) -> Iterator[ClaimRepository]:
    """The clarification rows for ``clarion audit export`` (read only)."""
    with opened_storage(settings) as storage:
        yield storage.claims


def _notification_store(storage: Storage) -> NotificationStore:
    # Every storage the settings name keeps notifications (a host's own is never opened here).
    assert storage.notifications is not None
    return storage.notifications

"""What the administrative commands work with, each over the one storage opener
(:func:`~clarion.app.root.storage.opened_storage`): migrated first, no SQLite file lock (they
serve and recover nothing, so they may run next to the serving process), closed after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from clarion.adapters.sql.audit import SqlAuditChain
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.root.settings import Settings
from clarion.app.root.storage import Storage, opened_storage
from clarion.app.root.wings.notifications import route_management
from clarion.app.usecases.approvals import Groups
from clarion.app.usecases.audit import AuditLog
from clarion.app.usecases.auth import Authentication
from clarion.app.usecases.notification_routes import NotificationRouting
from clarion.app.usecases.people_services import build_authentication
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.slack import SlackLinks
from clarion.ports.claims import ClaimRepository
from clarion.ports.notifications import NotificationStore


@contextmanager
def administration(settings: Settings) -> Iterator[Authentication]:
    """Users and tokens (``clarion users``, ``clarion tokens``)."""
    with opened_storage(settings) as storage:
        yield build_authentication(storage.tokens, SystemClock(), UuidIds(), settings.limits)


@contextmanager
def route_administration(settings: Settings) -> Iterator[NotificationRouting]:
    """Notification routes for ``clarion notify`` (the operator is unscoped: it manages every
    route)."""
    with opened_storage(settings) as storage:
        yield route_management(settings, storage, Runner())


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


@contextmanager
def audit_log(settings: Settings) -> Iterator[tuple[ClaimRepository, AuditLog]]:
    """The clarification rows and the audit chain (issue #34) for ``clarion audit`` (read
    only; the database the settings name)."""
    with opened_storage(settings) as storage:
        if storage.engine is None:  # pragma: no cover - the CLI requires a database
            raise ValueError("the audit chain is read from a database")
        yield storage.claims, AuditLog(SqlAuditChain(storage.engine))


def _notification_store(storage: Storage) -> NotificationStore:
    # Every storage the settings name keeps notifications (a host's own is never opened here).
    assert storage.notifications is not None
    return storage.notifications

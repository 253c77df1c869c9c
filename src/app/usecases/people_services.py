"""The use cases that serve people where they are (issue #32: every use case is built in one
place): sign-in, the signed answer links, the notification worker, the management of routes and
answering from Slack.

:func:`~clarion.app.usecases.services.build_services` builds them beside the core use cases
when it is given :class:`PeoplePorts`; the administrative commands build the one they need
with the same builder (:func:`build_authentication`, :func:`build_routing`). Like
``services.py``, this module imports ports and use cases only: the composition root chooses
the adapters (the channels, the answer-link store, the destination check) and passes them in.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import timedelta

import attrs

from clarion.app.usecases.access import GroupsOf
from clarion.app.usecases.answer_links import DEFAULT_TTL, AnswerLinks
from clarion.app.usecases.auth import Authentication, LoginThrottle
from clarion.app.usecases.lifecycle import Lifecycle
from clarion.app.usecases.notification_routes import NotificationRouting
from clarion.app.usecases.notifications import DeliveryPolicy, NotificationWorker
from clarion.app.usecases.resolve import Resolver
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.slack import SlackAnswering
from clarion.domain.limits import Limits
from clarion.ports.answer_links import AnswerLinkStore
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.host import HostRepository
from clarion.ports.notifications import (
    AnswerLinkIssuer,
    DestinationCheck,
    NotificationStore,
    Notifier,
)
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.telemetry import Metrics
from clarion.ports.tokens import TokenStore, UserDirectory


@attrs.frozen
class AnswerLinkSettings:
    """Where the answer-link page is served (``base_url``), the key ring that signs links (the
    first key signs, every key verifies; empty: a random key per process) and how long a link
    stays valid."""

    base_url: str
    keys: tuple[bytes, ...] = ()
    ttl: timedelta = DEFAULT_TTL


@attrs.frozen
class NotificationPorts:
    """The outbox and what the worker and route management are built over."""

    store: NotificationStore
    # The channels by kind, made once the answer links exist (the e-mail channel carries them).
    notifiers: Callable[[AnswerLinkIssuer], Mapping[str, Notifier]]
    # Whether a route may deliver to a channel's destination (issue #29 S4).
    destinations: DestinationCheck
    # Each channel kind that needs a setting to deliver, and that setting: a route on such a
    # channel without it is refused unless forced, naming the setting.
    channel_settings: Mapping[str, str]
    policy: DeliveryPolicy
    # The inbox's public base URL, for the links notifications carry.
    public_url: str
    # A user's groups, so an assigned bundle notifies its candidates only (issue #33; None:
    # no groups are kept).
    groups_of: GroupsOf | None = None


@attrs.frozen
class PeoplePorts:
    """What the people's use cases are built over, besides the core ports."""

    tokens: TokenStore
    answer_link_store: AnswerLinkStore
    links: AnswerLinkSettings
    auth_enabled: bool
    # None: the storage keeps no outbox (a host's own), so no worker, routes or Slack.
    notifications: NotificationPorts | None = None


@attrs.frozen
class PeopleServices:
    """Sign-in, answer links and (with an outbox) notifications and Slack."""

    authentication: Authentication
    answer_links: AnswerLinks
    notifications: NotificationWorker | None = None
    notification_routes: NotificationRouting | None = None
    # Answering from Slack (issue #18); its accounts are linked in the notification store.
    slack: SlackAnswering | None = None


@attrs.frozen
class CoreUseCases:
    """The ports and core use cases the people's use cases are built on (from
    :func:`~clarion.app.usecases.services.build_services`)."""

    claims: ClaimRepository
    host: HostRepository
    authorizer: TaskAuthorizer
    resolver: Resolver
    lifecycle: Lifecycle
    clock: Clock
    ids: IdGenerator
    runner: Runner
    metrics: Metrics
    limits: Limits


def build_people_services(ports: PeoplePorts, core: CoreUseCases) -> PeopleServices:
    """Each of the people's use cases, once."""
    answer_links = AnswerLinks(
        resolver=core.resolver,
        claims=core.claims,
        users=ports.tokens,
        store=ports.answer_link_store,
        clock=core.clock,
        runner=core.runner,
        base_url=ports.links.base_url,
        keys=ports.links.keys,
        ttl=ports.links.ttl,
        auth_enabled=ports.auth_enabled,
    )
    people = PeopleServices(
        build_authentication(ports.tokens, core.clock, core.ids, core.limits), answer_links
    )
    notifying = ports.notifications
    if notifying is None:
        return people
    channels = notifying.notifiers(answer_links)
    return attrs.evolve(
        people,
        notifications=_worker(notifying, channels, ports.tokens, core),
        notification_routes=build_routing(
            notifying,
            core.host,
            ports.tokens,
            core.runner,
            email_needs_user=ports.auth_enabled,
            channels=channels.keys(),
        ),
        slack=SlackAnswering(
            resolver=core.resolver,
            links=notifying.store,
            users=ports.tokens,
            runner=core.runner,
            auth_enabled=ports.auth_enabled,
        ),
    )


def build_authentication(
    tokens: TokenStore, clock: Clock, ids: IdGenerator, limits: Limits
) -> Authentication:
    """Sign-in over ``tokens``, bounded by ``limits`` (sessions per user, failed logins)."""
    return Authentication(
        tokens,
        clock,
        ids,
        max_sessions=limits.max_login_sessions,
        throttle=LoginThrottle(
            max_failures=limits.max_login_failures, window_s=limits.login_failure_window_s
        ),
    )


def build_routing(
    ports: NotificationPorts,
    host: HostRepository,
    users: UserDirectory | None,
    runner: Runner,
    *,
    email_needs_user: bool,
    channels: Collection[str],
) -> NotificationRouting:
    """Route management over the outbox of ``ports``; a route on a channel kind that is not
    in ``channels`` and needs a setting is refused unless forced, naming the setting."""
    return NotificationRouting(
        store=ports.store,
        host=host,
        users=users,
        runner=runner,
        email_needs_user=email_needs_user,
        destinations=ports.destinations,
        unconfigured={
            kind: name for kind, name in ports.channel_settings.items() if kind not in channels
        },
    )


def _worker(
    ports: NotificationPorts,
    channels: Mapping[str, Notifier],
    users: UserDirectory,
    core: CoreUseCases,
) -> NotificationWorker:
    return NotificationWorker(
        store=ports.store,
        claims=core.claims,
        host=core.host,
        authorizer=core.authorizer,
        users=users,
        notifiers=channels,
        expire=core.lifecycle.expire_bundle,
        answer=core.resolver.resolve,
        clock=core.clock,
        runner=core.runner,
        metrics=core.metrics,
        public_url=ports.public_url,
        policy=ports.policy,
        groups_of=ports.groups_of,
    )

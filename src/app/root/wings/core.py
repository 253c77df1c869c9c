"""Every use case, once (:func:`~clarion.app.usecases.services.build_services`), from the
settings and the ports the other wings chose: the core ones every surface shares and the
people's (sign-in, answer links, notifications, Slack), whose adapters are chosen here."""

from __future__ import annotations

from datetime import timedelta

from clarion.adapters.memory import InMemoryAnswerLinkStore, InMemoryAskRecords
from clarion.app.root.receipt_keys import receipt_keys
from clarion.app.root.settings import Settings
from clarion.app.root.storage import Storage
from clarion.app.root.wings.delivery import Delivery
from clarion.app.root.wings.notifications import notification_ports
from clarion.app.root.wings.telemetry import Telemetry
from clarion.app.usecases.people_services import AnswerLinkSettings, PeoplePorts, PeopleServices
from clarion.app.usecases.services import Services, build_services
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.notifications import Notifier
from clarion.ports.system import Clock, IdGenerator


def core_services(
    settings: Settings,
    storage: Storage,
    claims: ClaimRepository,
    authorizer: TaskAuthorizer,
    wired: Delivery,
    telemetry: Telemetry,
    clock: Clock,
    ids: IdGenerator,
    notifiers: dict[str, Notifier] | None,
) -> Services:
    """Every use case, once, with the worker threads of ``wired``; the notification channels
    are ``notifiers`` (None: those the settings configure)."""
    return build_services(
        claims=claims,
        host=storage.host,
        authorizer=authorizer,
        waiters=wired.waiters,
        dispatcher=wired.dispatcher,
        events=wired.events,
        clock=clock,
        ids=ids,
        runner=wired.runner,
        ask_timeout=settings.ask_timeout_s,
        resume_timeout=settings.resume_timeout_s,
        users=storage.tokens,
        limits=settings.limits,
        metrics=telemetry.metrics,
        tracer=telemetry.tracer,
        agent_workspace=settings.agent_workspace,
        ask_records=storage.asks if storage.asks is not None else InMemoryAskRecords(),
        people=people_ports(settings, storage, wired, notifiers),
        receipt_signer=receipt_keys(settings, storage.lock_file),
        groups=storage.groups,
        standing=storage.standing,
        roster=storage.tokens,
    )


def people_ports(
    settings: Settings, storage: Storage, wired: Delivery, notifiers: dict[str, Notifier] | None
) -> PeoplePorts:
    """The ports of sign-in, answer links, notifications and Slack from ``storage`` and
    ``settings``."""
    return PeoplePorts(
        tokens=storage.tokens,
        answer_link_store=storage.answer_links
        if storage.answer_links is not None
        else InMemoryAnswerLinkStore(),
        links=AnswerLinkSettings(
            base_url=settings.base_url,
            keys=settings.answer_link_keys,
            ttl=timedelta(seconds=settings.answer_link_ttl_s),
        ),
        auth_enabled=settings.auth_enabled,
        notifications=notification_ports(settings, storage, wired.runner, notifiers),
    )


def people_of(services: Services) -> PeopleServices:
    """The people's use cases, which :func:`core_services` always builds."""
    assert services.people is not None, "core_services builds the people's use cases"
    return services.people

"""The use cases every wing shares (:func:`~clarion.app.usecases.services.build_services`),
from the settings and the ports the other wings chose."""

from __future__ import annotations

from clarion.adapters.memory import InMemoryAskRecords
from clarion.app.root.settings import Settings
from clarion.app.root.storage import Storage
from clarion.app.root.wings.delivery import Delivery
from clarion.app.root.wings.telemetry import Telemetry
from clarion.app.usecases.services import Services, build_services
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
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
) -> Services:
    """Every use case the surfaces share, once, with the worker threads of ``wired``."""
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
        groups=storage.groups,
        standing=storage.standing,
        roster=storage.tokens,
    )

"""Wiring the use cases from ports: one instance of each, shared by every surface (N2).

This module imports ports and use cases only; the composition root chooses the adapters and
passes them in.
"""

from __future__ import annotations

from typing import TypedDict

import anyio
import attrs

from clarion.app.usecases.agent_asks import AgentAsks
from clarion.app.usecases.agents import AgentSessions
from clarion.app.usecases.approvals import Approvals, Groups, UserRoster
from clarion.app.usecases.ask import Asking
from clarion.app.usecases.host import HostOperations
from clarion.app.usecases.lifecycle import Lifecycle
from clarion.app.usecases.listing import Listing
from clarion.app.usecases.live import ASK_TIMEOUT_S, WATCH_INTERVAL_S, LiveRequests
from clarion.app.usecases.resolve import DELIVERY_TIMEOUT_S, RESUME_TIMEOUT_S, Resolver
from clarion.app.usecases.runner import Runner
from clarion.domain.limits import Limits
from clarion.ports.approvals import GroupDirectory, StandingApprovals
from clarion.ports.asks import AskRecords
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.events import EventPublisher
from clarion.ports.host import HostRepository
from clarion.ports.resume import ResumeDispatcher
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.telemetry import Metrics, NoMetrics, NoTracer, Tracer
from clarion.ports.tokens import UserDirectory
from clarion.ports.waiters import Waiters


@attrs.frozen
class Services:
    """The use cases: all a driving adapter (REST, MCP, the inbox, the CLI) is handed. The
    ports they were built from stay out of reach, so no surface can go around a use case
    (``listing.may_see_task`` rather than the authorizer, for example). Besides the use cases
    it carries only what surfaces render or bound with: the clock (``age_seconds``), the one
    ``runner`` (the :class:`clarion.ports.threads.Offload` for the blocking calls a surface
    makes itself, such as checking a credential) and the limits. The event source a stream
    reads is passed to a surface on its own (``create_rest_app(event_source=...)``)."""

    resolver: Resolver
    asking: Asking
    requests: LiveRequests
    listing: Listing
    lifecycle: Lifecycle
    host: HostOperations
    # Sessions of agents that ask without a host (the MCP agent endpoint).
    agents: AgentSessions
    clock: Clock
    runner: Runner
    limits: Limits
    # Issue #33: approval requests, standing approvals and the groups assignments name.
    approvals: Approvals
    groups: Groups
    metrics: Metrics = attrs.field(factory=NoMetrics)
    tracer: Tracer = attrs.field(factory=NoTracer)
    # Agents' asks as durable records (issue #28): exact retries, MCP tasks and late answers
    # on the MCP surfaces. None when built without an AskRecords store: asks then end with
    # their call, as before.
    agent_asks: AgentAsks | None = None

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The shared worker limiter the runner runs under."""
        return self.runner.limiter


def build_services(
    *,
    claims: ClaimRepository,
    host: HostRepository,
    authorizer: TaskAuthorizer,
    waiters: Waiters,
    dispatcher: ResumeDispatcher,
    events: EventPublisher,
    clock: Clock,
    ids: IdGenerator,
    limiter: anyio.CapacityLimiter | None = None,
    runner: Runner | None = None,
    ask_timeout: float = ASK_TIMEOUT_S,
    delivery_timeout: float = DELIVERY_TIMEOUT_S,
    resume_timeout: float = RESUME_TIMEOUT_S,
    users: UserDirectory | None = None,
    limits: Limits | None = None,
    watch_interval: float = WATCH_INTERVAL_S,
    metrics: Metrics | None = None,
    tracer: Tracer | None = None,
    ask_records: AskRecords | None = None,
    agent_workspace: str = "",
    groups: GroupDirectory | None = None,
    standing: StandingApprovals | None = None,
    roster: UserRoster | None = None,
) -> Services:
    """Build every use case once over the given ports.

    ``limiter`` bounds the worker threads that run the synchronous ports; or give the
    ``runner`` itself, when adapters built before the use cases offload through it too (one
    Runner, one shared limiter); ``ask_timeout`` bounds an agent's
    wait (``CLARION_ASK_TIMEOUT_S``); ``resume_timeout`` is the bounded wait for a detached
    resume (facts §4.7); ``users`` (the token store, in Clarion's own deployment) lets agent
    tokens stop working when the workspace owner they act as is deactivated; ``limits`` are
    the bounds every surface shares (defaults when None);
    ``watch_interval`` is how often a bystander's wait re-reads the bundle; ``metrics``
    counts and times what happens (:class:`NoMetrics` when None); ``ask_records`` keeps
    agents' asks (:class:`AgentAsks`; without it no surface offers retries or tasks);
    ``agent_workspace`` is where agents that ask without a host get their tasks
    (``CLARION_AGENT_WORKSPACE``; "" gives each caller its own "Agents" workspace);
    ``groups``, ``standing`` and ``roster`` (the token store) are the approvals' groups,
    standing approvals and users (issue #33; without them: no groups, no standing approvals,
    candidates named by id only).

    Raises:
        ValueError: both a ``runner`` and a different ``limiter`` were given.
    """
    if runner is not None and limiter is not None and limiter is not runner.limiter:
        raise ValueError("build_services takes a runner or a limiter, not two different pools")
    runner = runner if runner is not None else Runner(limiter)
    ports = _Ports(
        bundles=_BundlePorts(
            claims=claims, authorizer=authorizer, waiters=waiters, events=events, runner=runner
        ),
        host=host,
        clock=clock,
        ids=ids,
        limits=limits if limits is not None else Limits(),
        metrics=metrics if metrics is not None else NoMetrics(),
        tracer=tracer if tracer is not None else NoTracer(),
    )
    resolver = _resolver(ports, dispatcher, delivery_timeout, resume_timeout, groups)
    requests = _live_requests(ports, ask_timeout, watch_interval, groups)
    asking = _asking(ports, ask_timeout)
    approval_stores = _ApprovalStores(
        groups=groups, standing=standing, roster=roster, wait_interval=watch_interval
    )
    agent_asks = _agent_asks(ports, asking, ask_records) if ask_records is not None else None
    lifecycle = _lifecycle(ports)
    operations = _host_operations(ports, users)
    return Services(
        resolver=resolver,
        asking=asking,
        requests=requests,
        listing=_listing(ports),
        lifecycle=lifecycle,
        host=operations,
        agents=_agent_sessions(ports, operations, lifecycle, asking, agent_workspace),
        clock=clock,
        runner=runner,
        limits=ports.limits,
        metrics=ports.metrics,
        tracer=ports.tracer,
        agent_asks=agent_asks,
        approvals=_approvals(ports, asking, requests, resolver, approval_stores),
        groups=Groups(groups=groups, users=roster, runner=runner),
    )


@attrs.frozen
class _ApprovalStores:
    groups: GroupDirectory | None
    standing: StandingApprovals | None
    roster: UserRoster | None
    wait_interval: float


def _approvals(
    ports: _Ports,
    asking: Asking,
    requests: LiveRequests,
    resolver: Resolver,
    stores: _ApprovalStores,
) -> Approvals:
    return Approvals(
        claims=ports.bundles["claims"],
        host=ports.host,
        authorizer=ports.bundles["authorizer"],
        runner=ports.bundles["runner"],
        asking=asking,
        requests=requests,
        resolver=resolver,
        clock=ports.clock,
        ids=ports.ids,
        groups=stores.groups,
        standing=stores.standing,
        users=stores.roster,
        wait_interval=stores.wait_interval,
    )


class _BundlePorts(TypedDict):
    """The ports every use case that reads, settles or waits on bundles is built over."""

    claims: ClaimRepository
    authorizer: TaskAuthorizer
    waiters: Waiters
    events: EventPublisher
    runner: Runner


@attrs.frozen
class _Ports:
    """What :func:`build_services` builds each use case from: the ports, with the one runner,
    the limits and the telemetry settled."""

    bundles: _BundlePorts
    host: HostRepository
    clock: Clock
    ids: IdGenerator
    limits: Limits
    metrics: Metrics
    tracer: Tracer


def _resolver(
    ports: _Ports,
    dispatcher: ResumeDispatcher,
    delivery_timeout: float,
    resume_timeout: float,
    groups: GroupDirectory | None,
) -> Resolver:
    return Resolver(
        **ports.bundles,
        groups_of=groups.groups_of if groups is not None else None,
        dispatcher=dispatcher,
        delivery_timeout=delivery_timeout,
        resume_timeout=resume_timeout,
        metrics=ports.metrics,
        tracer=ports.tracer,
    )


def _live_requests(
    ports: _Ports, ask_timeout: float, watch_interval: float, groups: GroupDirectory | None
) -> LiveRequests:
    return LiveRequests(
        **ports.bundles,
        ask_timeout=ask_timeout,
        watch_interval=watch_interval,
        groups_of=groups.groups_of if groups is not None else None,
    )


def _asking(ports: _Ports, ask_timeout: float) -> Asking:
    return Asking(
        **ports.bundles,
        host=ports.host,
        ids=ports.ids,
        ask_timeout=ask_timeout,
        limits=ports.limits,
        metrics=ports.metrics,
    )


def _agent_asks(ports: _Ports, asking: Asking, records: AskRecords) -> AgentAsks:
    return AgentAsks(
        **ports.bundles, records=records, asking=asking, clock=ports.clock, ids=ports.ids
    )


def _lifecycle(ports: _Ports) -> Lifecycle:
    return Lifecycle(**ports.bundles, host=ports.host)


def _listing(ports: _Ports) -> Listing:
    return Listing(
        claims=ports.bundles["claims"],
        authorizer=ports.bundles["authorizer"],
        runner=ports.bundles["runner"],
        max_page_size=ports.limits.max_page_size,
        max_list_bytes=ports.limits.max_list_bytes,
    )


def _host_operations(ports: _Ports, users: UserDirectory | None) -> HostOperations:
    return HostOperations(
        host=ports.host,
        claims=ports.bundles["claims"],
        authorizer=ports.bundles["authorizer"],
        runner=ports.bundles["runner"],
        users=users,
        limits=ports.limits,
    )


def _agent_sessions(
    ports: _Ports,
    operations: HostOperations,
    lifecycle: Lifecycle,
    asking: Asking,
    workspace_id: str,
) -> AgentSessions:
    return AgentSessions(
        host=operations,
        lifecycle=lifecycle,
        asking=asking,
        clock=ports.clock,
        workspace_id=workspace_id,
    )

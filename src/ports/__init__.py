"""Ports: the protocols adapters implement. Contract suites live in :mod:`clarion.ports.testing`."""

from clarion.ports.answer_links import AnswerLinkStore, LinkUse
from clarion.ports.asks import AskRecords
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import (
    ActiveLimit,
    ClaimRepository,
    ClaimResult,
    LiveDelivery,
    ProcessLease,
    ReconcileReport,
    Reread,
    ResumeRecord,
)
from clarion.ports.events import Event, EventPublisher, EventSource
from clarion.ports.host import HostRepository
from clarion.ports.resume import ResumeDispatcher, ResumeRefused, ResumeRequest
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.tokens import TokenStore, UserDirectory
from clarion.ports.waiters import Confirm, Delivery, DeliveryResult, WaitEnd, WaitEnded, Waiters

__all__ = [
    "ActiveLimit",
    "AnswerLinkStore",
    "AskRecords",
    "ClaimRepository",
    "ClaimResult",
    "Clock",
    "Confirm",
    "Delivery",
    "DeliveryResult",
    "Event",
    "EventPublisher",
    "EventSource",
    "HostRepository",
    "IdGenerator",
    "LinkUse",
    "LiveDelivery",
    "ProcessLease",
    "ReconcileReport",
    "Reread",
    "ResumeDispatcher",
    "ResumeRecord",
    "ResumeRefused",
    "ResumeRequest",
    "TaskAuthorizer",
    "TokenStore",
    "UserDirectory",
    "WaitEnd",
    "WaitEnded",
    "Waiters",
]

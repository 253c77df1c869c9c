"""Reference in-memory adapters: shipped product code, and the oracle SQL is tested against."""

from clarion.adapters.memory.answer_links import InMemoryAnswerLinkStore
from clarion.adapters.memory.approvals import InMemoryGroupDirectory, InMemoryStandingApprovals
from clarion.adapters.memory.asks import InMemoryAskRecords
from clarion.adapters.memory.claims import InMemoryClaimRepository
from clarion.adapters.memory.host import InMemoryHostRepository
from clarion.adapters.memory.leases import InProcessLease, InProcessLeases
from clarion.adapters.memory.notifications import InMemoryNotificationStore
from clarion.adapters.memory.store import InMemoryStore
from clarion.adapters.memory.tokens import InMemoryTokenStore

__all__ = [
    "InMemoryAnswerLinkStore",
    "InMemoryAskRecords",
    "InMemoryClaimRepository",
    "InMemoryGroupDirectory",
    "InMemoryHostRepository",
    "InMemoryNotificationStore",
    "InMemoryStandingApprovals",
    "InMemoryStore",
    "InMemoryTokenStore",
    "InProcessLease",
    "InProcessLeases",
]

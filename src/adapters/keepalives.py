"""TCP keepalives for Clarion's long-lived PostgreSQL connections: the notify link's listener
(:mod:`clarion.adapters.postgres_notify.link`) and the lease holder
(:mod:`clarion.adapters.sql.lease`). With these a silent peer is noticed within about 25
seconds (10 s idle, then 3 probes 5 s apart), so a vanished database or host does not hold a
listener or a lease open for the kernel's default two hours.
"""

from __future__ import annotations

from typing import Final

# libpq connection parameters (the client side).
KEEPALIVES: Final = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}
# The same on the server side, as libpq ``options``.
SERVER_KEEPALIVES: Final = (
    "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
)

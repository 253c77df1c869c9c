"""The durable store: SQLAlchemy Core repositories on SQLite (the embedded default) and
PostgreSQL, with Alembic migrations shipped in the package.

    engine = create_engine("sqlite:///./clarion.db")   # or postgresql+psycopg://...
    upgrade_database(engine)
    claims = SqlClaimRepository(engine, clock, ids)
"""

from clarion.adapters.sql.answer_links import SqlAnswerLinkStore
from clarion.adapters.sql.approvals import SqlGroupDirectory, SqlStandingApprovals
from clarion.adapters.sql.asks import SqlAskRecords
from clarion.adapters.sql.claims import SqlClaimRepository
from clarion.adapters.sql.engine import DEFAULT_DATABASE_URL, autovacuum_disabled, create_engine
from clarion.adapters.sql.filelock import DatabaseInUse
from clarion.adapters.sql.filelock import acquire as hold_sqlite_file
from clarion.adapters.sql.filelock import release as release_sqlite_file
from clarion.adapters.sql.health import database_probe
from clarion.adapters.sql.host import SqlHostRepository
from clarion.adapters.sql.lease import PostgresLease, lease_for
from clarion.adapters.sql.migrate import head_revision, upgrade_database
from clarion.adapters.sql.notifications import SqlNotificationStore
from clarion.adapters.sql.schema import TABLE_NAMES, metadata
from clarion.adapters.sql.tokens import SqlTokenStore

__all__ = [
    "DEFAULT_DATABASE_URL",
    "TABLE_NAMES",
    "DatabaseInUse",
    "PostgresLease",
    "SqlAnswerLinkStore",
    "SqlAskRecords",
    "SqlClaimRepository",
    "SqlGroupDirectory",
    "SqlHostRepository",
    "SqlNotificationStore",
    "SqlStandingApprovals",
    "SqlTokenStore",
    "autovacuum_disabled",
    "create_engine",
    "database_probe",
    "head_revision",
    "hold_sqlite_file",
    "lease_for",
    "metadata",
    "release_sqlite_file",
    "upgrade_database",
]

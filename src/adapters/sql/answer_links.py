"""The SQL :class:`clarion.ports.answer_links.AnswerLinkStore`: one row per used answer link
in ``answer_link_uses``, keyed by the link's nonce. The primary key makes :meth:`consume`
atomic on SQLite and PostgreSQL alike: a second insert of the same nonce fails."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from clarion.adapters.sql.engine import SqlRepository, read_one
from clarion.adapters.sql.rows import from_row, row_values
from clarion.adapters.sql.schema import answer_link_uses
from clarion.ports.answer_links import LinkUse


class SqlAnswerLinkStore(SqlRepository):
    """See the module docstring."""

    def consume(self, use: LinkUse) -> bool:
        try:
            with self._writes.begin() as connection:
                connection.execute(
                    sa.insert(answer_link_uses).values(row_values(answer_link_uses, use))
                )
        except sa.exc.IntegrityError:
            return False
        return True

    def find(self, link_id: str) -> LinkUse | None:
        row = read_one(
            self._engine,
            sa.select(answer_link_uses).where(answer_link_uses.c.link_id == link_id),
        )
        return None if row is None else from_row(LinkUse, row)

    def release(self, link_id: str) -> bool:
        with self._writes.begin() as connection:
            result = connection.execute(
                sa.delete(answer_link_uses).where(answer_link_uses.c.link_id == link_id)
            )
        return result.rowcount > 0

    def purge(self, now: datetime) -> int:
        with self._writes.begin() as connection:
            result = connection.execute(
                sa.delete(answer_link_uses).where(answer_link_uses.c.expires_at < now)
            )
        return result.rowcount

"""Statements sent straight to the driver's cursor (issue #34).

``Connection.exec_driver_sql`` skips compilation, but still builds an execution context, runs
the event dispatch and sets up a result object — reading the cursor's description and
looking up a type processor for every returned column — on every call: on these machines
45 µs on a primary-key read of 17 columns that takes sqlite3 itself 8 µs, 77 µs on the
claim's ``UPDATE … RETURNING``.
The claim and its audit record (a resolution's hot path, run once per answer), the bundle
lock before it and SQLite's ``BEGIN`` run here instead, on the connection's own DBAPI cursor,
in the transaction the ``Connection`` holds.

What ``exec_driver_sql`` would add is kept where it matters:

- **listeners**: while anything listens for ``before_cursor_execute``,
  ``after_cursor_execute`` or ``handle_error`` on the connection or its engine (statement
  counters, query-plan checks, tracing), the statement goes through ``exec_driver_sql``, so
  they see it as before;
- **errors**: a driver error is raised as SQLAlchemy's wrapper for it
  (:class:`sqlalchemy.exc.IntegrityError`, :class:`~sqlalchemy.exc.OperationalError` …, with
  the driver's exception as ``orig`` and the parameters hidden as the engine hides them);
- **lost connections**: when the dialect says the error means the connection is gone, the
  ``Connection`` is invalidated — the pool discards it instead of handing it out again — and
  the wrapper says so (``connection_invalidated``).
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import exc
from sqlalchemy.engine import Connection


def _observed(connection: Connection) -> bool:
    """Whether a listener would see this statement through ``exec_driver_sql`` (the
    connection's dispatch joins its engine's; ``handle_error`` is a dialect event)."""
    dispatch = connection.dispatch
    return bool(
        dispatch.before_cursor_execute
        or dispatch.after_cursor_execute
        or connection.dialect.dispatch.handle_error
    )


def driver_rows(connection: Connection, sql: str, parameters: Any = None) -> list[Any]:
    """Run ``sql`` (in the driver's own parameter style) with ``parameters`` in
    ``connection``'s transaction; the rows it returns (``[]`` for a statement that returns
    none), as the driver gives them.

    Raises:
        sqlalchemy.exc.DBAPIError: the driver's error, wrapped as ``exec_driver_sql`` wraps it.
    """
    if _observed(connection):
        result = connection.exec_driver_sql(sql, parameters)
        return list(result.fetchall()) if result.returns_rows else []
    proxied = connection.connection
    cursor = proxied.cursor()
    try:
        if parameters is None:
            cursor.execute(sql)
        else:
            cursor.execute(sql, parameters)
        return list(cursor.fetchall()) if cursor.description is not None else []
    except connection.dialect.loaded_dbapi.Error as error:
        raise _wrapped(connection, error, sql, parameters, cursor) from error
    finally:
        cursor.close()


def _wrapped(
    connection: Connection, error: Any, sql: str, parameters: Any, cursor: Any
) -> exc.DBAPIError:
    """``error`` (the driver's) as SQLAlchemy's wrapper, ``connection`` invalidated when the
    dialect says it is lost."""
    dialect = connection.dialect
    lost = dialect.is_disconnect(error, connection.connection.dbapi_connection, cursor)
    if lost:
        connection.invalidate(error)
    wrapped = exc.DBAPIError.instance(
        sql,
        parameters,
        error,
        dialect.loaded_dbapi.Error,
        hide_parameters=connection.engine.hide_parameters,
        connection_invalidated=lost,
        dialect=dialect,
        ismulti=False,
    )
    return cast(exc.DBAPIError, wrapped)  # a DBAPI error in: its DBAPIError subclass out


__all__ = ["driver_rows"]

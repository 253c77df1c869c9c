"""Keyset pages of the reference host's lists: workspaces, tasks, a session's transcript and its
resumes (issue #14 "page size of every list").

Each list is ordered by ``(created_at, id)`` ascending and walked from a position: the opaque
cursor of the last item returned (the pending list's codec, :mod:`clarion.domain.cursor`, L9
and L13), so a page costs one index walk of ``limit + 1`` rows whatever the list's length.
``limit`` is the page size: absent means the default (``CLARION_DEFAULT_PAGE_SIZE``), and a
value below 1 or above the maximum (``CLARION_MAX_PAGE_SIZE``) is refused naming ``limit`` —
these lists are Clarion's own, so unlike the pending list (L10) nothing is clamped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Generic, Protocol, TypeVar

import attrs

from clarion.domain.cursor import decode_cursor, encode_cursor
from clarion.domain.errors import InvalidArgument

DEFAULT_PAGE_SIZE = 50


class Keyed(Protocol):
    """What a paged list orders by: ``created_at``, then ``id``."""

    @property
    def id(self) -> str: ...

    @property
    def created_at(self) -> datetime: ...


T = TypeVar("T")
K = TypeVar("K", bound=Keyed)


@attrs.frozen
class PageRequest:
    """One page: at most ``limit`` items strictly after ``after`` (a decoded cursor)."""

    limit: int
    after: tuple[datetime, str] | None = None

    def admits(self, item: Keyed) -> bool:
        """Whether ``item`` lies strictly after the position."""
        return self.after is None or (item.created_at, item.id) > self.after


@attrs.frozen
class Page(Generic[T]):
    """A page in ``(created_at, id)`` order; ``next_cursor`` is "" on the last page."""

    items: tuple[T, ...]
    next_cursor: str = ""


def page_size(limit: int | None, *, default: int, maximum: int) -> int:
    """The page size asked for: ``default`` (at most ``maximum``) when absent.

    Raises:
        InvalidArgument: ``limit`` is below 1 or above ``maximum``; ``field`` is ``limit``.
    """
    if limit is None:
        return min(default, maximum)
    if limit < 1 or limit > maximum:
        raise InvalidArgument(
            f"limit: must be between 1 and {maximum} (CLARION_MAX_PAGE_SIZE), got {limit}",
            field="limit",
        )
    return limit


def page_request(cursor: str, limit: int | None, *, default: int, maximum: int) -> PageRequest:
    """Parse ``cursor`` ("" = from the start) and ``limit`` into a :class:`PageRequest`.

    Raises:
        InvalidArgument: a corrupt cursor (``field`` ``cursor``) or a bad limit (``limit``).
    """
    size = page_size(limit, default=default, maximum=maximum)
    return PageRequest(limit=size, after=decode_cursor(cursor) if cursor else None)


def cut_page(items: Sequence[K], limit: int) -> Page[K]:
    """The page from up to ``limit + 1`` ordered items: the first ``limit``, and a cursor
    after the last of them when a further item exists."""
    kept = tuple(items[:limit])
    more = len(items) > limit and bool(kept)
    return Page(
        items=kept, next_cursor=encode_cursor(kept[-1].created_at, kept[-1].id) if more else ""
    )


# -- pages bounded in bytes as well as items (issue #29 F8) -----------------------------------

# How many items the first read of a byte-bounded page asks for; later reads ask for as many
# as the budget left holds at the largest item seen so far.
FIRST_READ = 10
DEFAULT_MAX_LIST_BYTES = 1024 * 1024

B = TypeVar("B")


def budgeted_page(
    read: Callable[[int, B | None], tuple[Sequence[B], bool]],
    *,
    limit: int,
    max_bytes: int,
    size_of: Callable[[B], int],
    first_read: int = FIRST_READ,
) -> tuple[tuple[B, ...], bool]:
    """One page of at most ``limit`` items whose sizes (``size_of``) add up to at most
    ``max_bytes`` — except that a page always holds at least one item, however large — and
    whether further items exist (the caller's ``next_cursor`` then continues after the last
    item returned, so walking the pages loses and repeats nothing).

    ``read(n, after)`` returns up to ``n`` items strictly after the item ``after`` (None: from
    the start) in the list's order, and whether more exist beyond them. It is called with
    small counts first and then with as many as the budget left holds at the largest item
    seen, so the items read but not returned are at most one read's worth.
    """
    kept: list[B] = []
    used = 0
    largest = 0
    while True:
        room = limit - len(kept)
        if not kept:
            want = min(room, first_read)
        else:
            want = min(room, max(1, (max_bytes - used) // max(largest, 1)))
        items, more = read(want, kept[-1] if kept else None)
        for item in items:
            size = size_of(item)
            if kept and used + size > max_bytes:
                return tuple(kept), True
            kept.append(item)
            used += size
            largest = max(largest, size)
        if not more or not items:
            return tuple(kept), False
        if len(kept) >= limit or used >= max_bytes:
            return tuple(kept), True

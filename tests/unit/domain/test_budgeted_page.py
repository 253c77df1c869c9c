"""#29 F8: pages bounded in bytes as well as items. Walking the pages of a list returns every
item exactly once, in order, whatever the item sizes, byte budget, limit and first read size;
every page holds at least one item and stays within the budget unless it is that one item."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from clarion.domain.paging import budgeted_page


class _Store:
    """A keyset-ordered list of (key, size) items read by ``read(n, after)``, counting reads
    and the items they load."""

    def __init__(self, sizes: Sequence[int]) -> None:
        self.items = [(index, size) for index, size in enumerate(sizes)]
        self.loaded = 0

    def read(self, count: int, after: tuple[int, int] | None) -> tuple[list[tuple[int, int]], bool]:
        assert count >= 1
        start = 0 if after is None else after[0] + 1
        found = self.items[start : start + count]
        self.loaded += len(found)
        return found, start + count < len(self.items)


def _walk(
    store: _Store, *, limit: int, budget: int, first_read: int
) -> list[list[tuple[int, int]]]:
    pages: list[list[tuple[int, int]]] = []
    after: tuple[int, int] | None = None
    for _ in range(len(store.items) + 2):

        def read(
            count: int, last: tuple[int, int] | None, start: tuple[int, int] | None = after
        ) -> tuple[list[tuple[int, int]], bool]:
            return store.read(count, last if last is not None else start)

        items, more = budgeted_page(
            read, limit=limit, max_bytes=budget, size_of=lambda item: item[1], first_read=first_read
        )
        pages.append(list(items))
        if not more:
            return pages
        after = items[-1]  # the next_cursor: the last item returned
    raise AssertionError("the walk never ended")


@settings(max_examples=400, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=5000), max_size=60),
    budget=st.integers(min_value=1, max_value=20000),
    limit=st.integers(min_value=1, max_value=25),
    first_read=st.integers(min_value=1, max_value=12),
)
def test_walking_byte_bounded_pages_loses_and_repeats_nothing(
    sizes: list[int], budget: int, limit: int, first_read: int
) -> None:
    store = _Store(sizes)
    pages = _walk(store, limit=limit, budget=budget, first_read=first_read)
    assert [item for page in pages for item in page] == store.items
    for page in pages[:-1] if sizes else pages[:0]:
        assert page, "a page before the end is never empty"
    for page in pages:
        assert len(page) <= limit
        assert len(page) <= 1 or sum(size for _, size in page) <= budget
    if not sizes:
        assert pages == [[]]


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=60),
    budget=st.integers(min_value=1, max_value=20000),
    limit=st.integers(min_value=1, max_value=25),
)
def test_a_page_stops_only_where_the_next_item_would_not_fit(
    sizes: list[int], budget: int, limit: int
) -> None:
    """A page is cut by the budget only when its next item would take it past the budget,
    and loads at most one read's worth of items it does not return."""
    store = _Store(sizes)
    items, more = budgeted_page(
        lambda n, last: store.read(n, last), limit=limit, max_bytes=budget, size_of=lambda i: i[1]
    )
    total = sum(size for _, size in items)
    if more and len(items) < limit:
        following = sizes[len(items)]
        assert total + following > budget or total >= budget
    assert not more or len(items) < len(sizes)
    assert store.loaded - len(items) <= max(limit, 10)


def test_a_single_item_larger_than_the_budget_is_a_page_of_its_own() -> None:
    store = _Store([50, 10, 10])
    items, more = budgeted_page(
        lambda n, last: store.read(n, last), limit=10, max_bytes=20, size_of=lambda i: i[1]
    )
    assert (items, more) == (((0, 50),), True)

"""The host lists' page rules (issue #14 "page size of every list"; cursor codec L9, L13)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from clarion.domain.cursor import decode_cursor
from clarion.domain.errors import InvalidArgument
from clarion.domain.host import Workspace
from clarion.domain.paging import PageRequest, cut_page, page_request, page_size

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_an_absent_limit_is_the_default_capped_by_the_maximum() -> None:
    assert page_size(None, default=50, maximum=200) == 50
    assert page_size(None, default=50, maximum=20) == 20


@pytest.mark.parametrize("limit", [1, 7, 200])
def test_a_limit_from_one_to_the_maximum_is_taken_as_asked(limit: int) -> None:
    assert page_size(limit, default=50, maximum=200) == limit


@pytest.mark.parametrize("limit", [0, -1, 201])
def test_a_limit_out_of_range_is_refused_naming_limit(limit: int) -> None:
    with pytest.raises(InvalidArgument) as error:
        page_size(limit, default=50, maximum=200)
    assert error.value.field == "limit"
    assert "CLARION_MAX_PAGE_SIZE" in str(error.value)


def test_a_corrupt_cursor_is_refused_naming_cursor() -> None:
    """L13's rule for the host lists too."""
    with pytest.raises(InvalidArgument) as error:
        page_request("not a cursor", None, default=50, maximum=200)
    assert error.value.field == "cursor"


def test_a_page_cuts_at_the_limit_and_points_after_its_last_item() -> None:
    items = [Workspace(f"w{i}", "n", "", START + timedelta(seconds=i)) for i in range(3)]
    page = cut_page(items, 2)
    assert page.items == tuple(items[:2])
    assert decode_cursor(page.next_cursor) == (items[1].created_at, "w1")
    assert cut_page(items, 3).next_cursor == ""
    assert cut_page([], 3).items == ()


def test_a_position_admits_only_what_lies_strictly_after_it() -> None:
    same_time = Workspace("b", "n", "", START)
    request = PageRequest(5, after=(START, "a"))
    assert request.admits(same_time)
    assert not PageRequest(5, after=(START, "b")).admits(same_time)
    assert PageRequest(5).admits(same_time)

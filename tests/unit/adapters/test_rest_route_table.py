"""The one route table: served routes and documented operations cannot drift apart."""

from __future__ import annotations

import pytest
from starlette.requests import Request
from starlette.responses import Response

from clarion.adapters.rest.openapi import openapi_document
from clarion.adapters.rest.routes import TABLE, Endpoint, operation_ids, starlette_routes


async def _endpoint(request: Request) -> Response:
    return Response()


def _all() -> dict[str, Endpoint]:
    return {spec.operation_id: _endpoint for spec in TABLE}


def test_every_documented_operation_is_one_row_of_the_table() -> None:
    document = openapi_document(auth_enabled=True)
    documented = {
        (path, method.upper()): operation["operationId"]
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }
    assert documented == {(spec.path, spec.method): spec.operation_id for spec in TABLE}


def test_an_endpoint_missing_from_the_table_or_the_table_missing_an_endpoint_is_refused() -> None:
    endpoints = _all()
    routes = starlette_routes(endpoints)
    assert [(route.path, route.methods) for route in routes] == [
        (spec.path, {spec.method} | ({"HEAD"} if spec.method == "GET" else set())) for spec in TABLE
    ]
    del endpoints["health"]
    with pytest.raises(ValueError, match="no endpoint for \\['health'\\]"):
        starlette_routes(endpoints)
    with pytest.raises(ValueError, match="unlisted \\['extra'\\]"):
        starlette_routes({**_all(), "extra": _endpoint})


def test_two_groups_serving_one_operation_are_refused() -> None:
    with pytest.raises(ValueError, match="served twice"):
        operation_ids(a={"login": _endpoint}, b={"login": _endpoint})

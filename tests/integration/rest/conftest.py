"""Fixtures for the REST tests: one application per test, in either auth mode."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.integration.rest.harness import LOCAL_URL, Caller, RestWorld, setup_caller


@pytest.fixture(name="auth_enabled", params=[False, True], ids=["auth-disabled", "auth-enabled"])
def fixture_auth_enabled(request: pytest.FixtureRequest) -> bool:
    enabled = request.param
    assert isinstance(enabled, bool)
    return enabled


@pytest.fixture(name="world")
def fixture_world(auth_enabled: bool) -> RestWorld:
    return RestWorld.build(auth_enabled=auth_enabled)


@pytest.fixture(name="client")
def fixture_client(world: RestWorld) -> Iterator[TestClient]:
    with TestClient(world.app, base_url=LOCAL_URL) as client:
        yield client


@pytest.fixture(name="alice")
def fixture_alice(client: TestClient, world: RestWorld) -> Caller:
    return setup_caller(client, world, "alice")


@pytest.fixture(name="bob")
def fixture_bob(client: TestClient, world: RestWorld) -> Caller:
    return setup_caller(client, world, "bob")

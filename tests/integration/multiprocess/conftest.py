"""Three replicas over one fresh PostgreSQL database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.multiprocess.cluster import Replica, running_cluster


@pytest.fixture(name="replicas")
def fixture_replicas(postgres_database_url: str, tmp_path: Path) -> Iterator[list[Replica]]:
    with running_cluster(postgres_database_url, tmp_path) as replicas:
        yield replicas

"""Issue #20: ``GET /metrics`` in the Prometheus text format — admin only with auth enabled,
counters that move by exactly what a scripted scenario did, and pending gauges read from the
database so two instances on one PostgreSQL report the same figures."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings

LOCAL = "http://127.0.0.1:8765"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@contextmanager
def serving(database_url: str, *, auth_enabled: bool) -> Iterator[tuple[Clarion, TestClient]]:
    clarion = build_clarion(Settings(database_url=database_url, auth_enabled=auth_enabled))
    try:
        with TestClient(clarion.asgi_app, base_url=LOCAL) as client:
            yield clarion, client
    finally:
        clarion.close()


def scrape(client: TestClient, headers: dict[str, str] | None = None) -> Samples:
    response = client.get("/metrics", headers=headers or {})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _bundle(client: TestClient, headers: dict[str, str]) -> str:
    workspace = client.post("/api/v1/workspaces", json={"name": "w"}, headers=headers).json()
    task = client.post(
        "/api/v1/tasks", json={"title": "t", "workspace_id": workspace["id"]}, headers=headers
    ).json()
    session = client.post(f"/api/v1/tasks/{task['id']}/sessions", json={}, headers=headers)
    created = client.post(
        "/api/v1/clarification/request",
        json={
            "session_id": session.json()["id"],
            "questions": [
                {
                    "prompt": "Ship?",
                    "options": [
                        {"label": "Yes", "description": "y"},
                        {"label": "No", "description": "n"},
                    ],
                }
            ],
        },
        headers=headers,
    )
    assert created.status_code == 200, created.text
    pending_id = created.json()["pending_id"]
    assert isinstance(pending_id, str)
    return pending_id


def test_metrics_need_an_admin_credential_and_count_exactly_a_scripted_scenario(
    tmp_path: Path,
) -> None:
    with serving(f"sqlite:///{tmp_path / 'm.db'}", auth_enabled=True) as (clarion, client):
        auth = clarion.authentication
        root = auth.create_user("root", is_admin=True)
        admin = {"Authorization": f"Bearer {auth.issue_token(root.id).token}"}
        alice = {"Authorization": f"Bearer {auth.issue_token(auth.create_user('alice').id).token}"}
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers=alice).status_code == 403
        before = scrape(client, admin)

        answered = _bundle(client, alice)
        _bundle(client, alice)  # left pending
        respond = f"/api/v1/clarification/{answered}/respond"
        bad = {"answers": [{"question_id": "q1", "selected_options": ["nope"]}]}
        good = {"answers": [{"question_id": "q1", "selected_options": ["q1_opt1"]}]}
        assert client.post(respond, json=bad, headers=alice).status_code == 400
        assert client.post(respond, json=good, headers=alice).json()["claimed"] is True
        labelled = {**alice, "X-Clarion-Surface": "cli"}
        assert client.post(respond, json=good, headers=labelled).json()["claimed"] is False

        after = scrape(client, admin)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("clarion_bundles_created_total") == 2
    assert moved("clarion_bundles_resolved_total", outcome="answered", surface="rest") == 1
    assert moved("clarion_claims_lost_total", surface="cli") == 1
    assert moved("clarion_claims_lost_total", surface="rest") == 0
    assert moved("clarion_validation_refusals_total", operation="answer") == 1
    assert moved("clarion_resume_dispatches_total", result="accepted") == 1
    assert moved("clarion_time_to_answer_seconds_count") == 1
    assert moved("clarion_time_to_answer_seconds_bucket", le="86400.0") == 1
    route = "/api/v1/clarification/{pending_id}/respond"
    for status, count in (("400", 1), ("200", 2)):
        name = "clarion_http_request_duration_seconds_count"
        assert moved(name, route=route, method="POST", status=status) == count
    assert value(after, "clarion_pending_bundles") == 1
    assert value(after, "clarion_oldest_pending_age_seconds") >= 0
    assert value(after, "clarion_live_asks") == 0


def test_the_pending_gauge_agrees_between_two_instances_on_one_postgresql(
    postgres_database_url: str,
) -> None:
    """Both read the database at scrape time: what one created, the other reports."""
    with (
        serving(postgres_database_url, auth_enabled=False) as (_, first),
        serving(postgres_database_url, auth_enabled=False) as (_, second),
    ):
        for _ in range(3):
            _bundle(first, {})
        one, other = scrape(first), scrape(second)
        assert value(one, "clarion_pending_bundles") == value(other, "clarion_pending_bundles") == 3
        assert value(one, "clarion_bundles_created_total") == 3
        assert value(other, "clarion_bundles_created_total") == 0  # counters are per process


STANDARD_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}


def test_invented_methods_and_unmatched_paths_never_become_label_values(tmp_path: Path) -> None:
    """#29 S3: label values come from fixed sets — a method outside the standard ones is
    ``other`` and a path no route matches is ``unmatched`` — so 60 unique methods and paths
    add no series beyond the first."""
    with serving(f"sqlite:///{tmp_path / 'l.db'}", auth_enabled=False) as (_, client):

        def flood(start: int, count: int) -> None:
            for n in range(start, start + count):
                client.request(f"X{n}METHOD", "/api/v1/clarification/pending")
                client.request(f"x{n}", f"/not-a-route/secret-{n}")
                client.get(f"/answer-nothing/{n}")
                client.request("get", "/healthz")  # methods are case-sensitive

        flood(0, 1)
        scrape(client)  # the scrape's own series exist from here on
        series = len(scrape(client))
        flood(1, 60)
        after = scrape(client)
    http = [dict(labels) for name, labels in after if name.startswith("clarion_http_request")]
    assert {labels["method"] for labels in http} <= STANDARD_METHODS | {"other"}
    assert "other" in {labels["method"] for labels in http}
    routes = {labels["route"] for labels in http}
    assert "unmatched" in routes
    assert not any("secret" in route or "not-a-route" in route for route in routes)
    assert len(after) == series


DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_every_metric_is_documented_and_the_dashboard_queries_only_real_ones(
    tmp_path: Path,
) -> None:
    import json
    import re

    with serving(f"sqlite:///{tmp_path / 'd.db'}", auth_enabled=False) as (_, client):
        families = {
            family.name
            for family in text_string_to_metric_families(client.get("/metrics").text)
            # prometheus_client's own ``*_created`` timestamp series are not ours to document.
            if family.name.startswith("clarion_") and not family.name.endswith("_created")
        }
    documented = (DOCS / "observability.md").read_text(encoding="utf-8")
    for name in families:
        shown = name + "_total" if f"`{name}_total`" in documented else name
        assert f"`{shown}`" in documented, name
    dashboard = json.loads((DOCS / "grafana" / "clarion-dashboard.json").read_text("utf-8"))
    queried = {
        re.sub(r"_(bucket|count|sum|total)$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"clarion_[a-z_]+", target["expr"])
    }
    assert queried
    assert queried <= families, queried - families

"""Concurrent votes over REST on a real server (issue #33): the trials the race test runs and
``benchmarks/approval_race.py`` prints.

Each trial asks for one approval with a random quorum M of N candidate voters and sends every
voter's vote at once — some approve, some (by chance) deny, some vote twice, half through
``/approvals/{id}/decision`` and half through the generic ``/clarification/{id}/respond``.
Then it reads the request back and counts an *anomaly* for anything that breaks the rules:

- a 5xx, or any status a vote may not get (decision: 200; respond: 200 or 202; 409 never —
  the request is decided, never closed, while its voters vote);
- a voter recorded twice, or a vote recorded after the deciding one (the tally of the votes
  before the last must be undecided, and of all of them must be the decision);
- not exactly one winner (one respond with ``claimed: true``, or one counted decision that
  decided), or a decider other than the last recorded voter;
- a voter told another outcome than the final one once decided.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import attrs
import httpx2

from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.approvals import Decision, Vote, tally
from tests.sockets import serving_in_thread

API = "/api/v1"
ACTION = {"name": "shell", "arguments": {"command": "make deploy"}}


@attrs.frozen
class Voter:
    user_id: str
    name: str
    headers: dict[str, str]


@attrs.define
class Race:
    """A served Clarion with an administrator's session and voters."""

    url: str
    admin: dict[str, str]
    session_id: str
    voters: list[Voter]
    trials: int = 0
    anomalies: list[str] = attrs.field(factory=list)


@contextmanager
def served_race(database_url: str, voters: int = 6) -> Iterator[Race]:
    """A Clarion server on ``database_url`` (migrated), with an unowned workspace, a session
    and ``voters`` users with tokens."""
    clarion = build_clarion(Settings(database_url=database_url, auth_enabled=True))
    clarion.upgrade()
    auth = clarion.authentication
    root = auth.create_user("root", is_admin=True)
    admin = {"Authorization": f"Bearer {auth.issue_token(root.id).token}"}
    people = []
    for number in range(voters):
        user = auth.create_user(f"voter{number}")
        headers = {"Authorization": f"Bearer {auth.issue_token(user.id).token}"}
        people.append(Voter(user.id, user.name, headers))
    try:
        with serving_in_thread(clarion.asgi_app) as url, httpx2.Client(base_url=url) as http:
            workspace = http.post(
                f"{API}/workspaces", json={"name": "race", "owner_id": ""}, headers=admin
            ).json()
            task = http.post(
                f"{API}/tasks",
                json={"title": "race", "workspace_id": workspace["id"]},
                headers=admin,
            ).json()
            session = http.post(f"{API}/tasks/{task['id']}/sessions", json={}, headers=admin).json()
            yield Race(url, admin, session["id"], people)
    finally:
        clarion.close()


@attrs.frozen
class Ballot:
    voter: Voter
    decision: Decision
    via_respond: bool


@attrs.define
class Reply:
    ballot: Ballot
    status: int
    body: Any


async def run_trial(race: Race, http: httpx2.AsyncClient, rng: random.Random) -> None:
    """One trial; anomalies are appended to ``race.anomalies``, prefixed by the trial."""
    count = rng.randint(2, len(race.voters))
    voters = rng.sample(race.voters, count)
    required = rng.randint(1, count)
    deny_chance = rng.choice((0.0, 0.15, 0.5))
    created = await http.post(
        f"{API}/approvals/request",
        json={
            "session_id": race.session_id,
            "action": ACTION,
            "required_approvals": required,
            "candidates": {"users": [voter.name for voter in voters]},
        },
        headers=race.admin,
    )
    race.trials += 1
    label = f"trial {race.trials} ({required} of {count})"
    if created.status_code != 201:
        race.anomalies.append(f"{label}: request {created.status_code} {created.text}")
        return
    pending_id = created.json()["pending_id"]
    ballots = []
    for voter in voters:
        decision = Decision.DENY if rng.random() < deny_chance else Decision.APPROVE
        for _ in range(rng.choice((1, 1, 2))):  # some vote twice
            ballots.append(Ballot(voter, decision, via_respond=rng.random() < 0.5))
    rng.shuffle(ballots)
    replies: list[Reply] = []
    async with anyio.create_task_group() as group:
        for ballot in ballots:
            group.start_soon(_cast, http, pending_id, ballot, replies)
    final = await http.get(f"{API}/approvals/{pending_id}", headers=race.admin)
    race.anomalies.extend(f"{label}: {problem}" for problem in judge(final.json(), replies))


async def _cast(
    http: httpx2.AsyncClient, pending_id: str, ballot: Ballot, replies: list[Reply]
) -> None:
    if ballot.via_respond:
        response = await http.post(
            f"{API}/clarification/{pending_id}/respond",
            json={"answers": [{"question_id": "decision", "selected_options": [ballot.decision]}]},
            headers=ballot.voter.headers,
        )
    else:
        response = await http.post(
            f"{API}/approvals/{pending_id}/decision",
            json={"decision": ballot.decision.value},
            headers=ballot.voter.headers,
        )
    replies.append(Reply(ballot, response.status_code, response.json()))


def judge(view: dict[str, Any], replies: list[Reply]) -> list[str]:
    """Every rule the final ``view`` and the voters' ``replies`` break."""
    problems: list[str] = []
    votes = [Vote(v["voter"], v["display_name"], Decision(v["decision"])) for v in view["votes"]]
    voters = [vote.voter_id for vote in votes]
    if len(set(voters)) != len(voters):
        problems.append(f"a voter recorded twice: {voters}")
    required = view["required_approvals"]
    decision = view["decision"]
    if decision is None:
        problems.append(f"undecided after every vote: {view['status']}")
        return problems
    if tally(required, votes) != Decision(decision) or tally(required, votes[:-1]) is not None:
        problems.append(f"votes recorded past the deciding one, or a wrong tally: {voters}")
    if view["decided_by"]["identity_id"] != voters[-1]:
        problems.append("the decider is not the last recorded voter")
    problems.extend(_judge_replies(view, replies))
    return problems


def _judge_replies(view: dict[str, Any], replies: list[Reply]) -> list[str]:
    problems: list[str] = []
    winners = 0
    for reply in replies:
        expected = (200, 202) if reply.ballot.via_respond else (200,)
        if reply.status not in expected:
            problems.append(f"a vote got {reply.status}: {reply.body}")
            continue
        if reply.ballot.via_respond:
            if reply.status == 200:
                winners += bool(reply.body["claimed"])
                told = reply.body["response"]["answers"][0]["selected_options"][0]
                if told != view["decision"]:
                    problems.append(f"a voter was told {told}, the decision is {view['decision']}")
            continue
        approval = reply.body["approval"]
        if approval["status"] != "pending" and approval["decision"] != view["decision"]:
            problems.append(f"a voter was told {approval['decision']}")
        decided_now = (
            reply.body["counted"]
            and approval["status"] != "pending"
            and approval["decided_by"]["identity_id"] == reply.ballot.voter.user_id
            and reply.body["vote"]["voter"] == approval["votes"][-1]["voter"]
        )
        winners += bool(decided_now)
    if winners != 1:
        problems.append(f"{winners} winners")
    return problems


async def run_trials(race: Race, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    async with httpx2.AsyncClient(base_url=race.url, timeout=60) as http:
        for _ in range(trials):
            await run_trial(race, http, rng)

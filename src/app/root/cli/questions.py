"""``clarion questions list``, ``answer`` and ``history``: a person at a shell, over the REST
API."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from clarion.app.root.cli.common import (
    DEFAULT_URL,
    CliError,
    command_group,
    print_listing,
    server_commands,
)
from clarion.app.root.client import ClarionClient, ClientError
from clarion.domain.history import CLOSED_WHY


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    question_commands = command_group(
        commands, "questions", help="list and answer questions from a shell"
    )
    list_questions = question_commands.add_parser(
        "list", help="list the pending questions you may see"
    )
    list_questions.add_argument("--workspace", default="", help="only this workspace's questions")
    list_questions.add_argument("--json", action="store_true", help="print the raw JSON envelope")
    answer = question_commands.add_parser("answer", help="answer or reject a pending bundle")
    answer.add_argument("pending_id", help="the bundle's pending_id (see `questions list`)")
    answer.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="QUESTION=OPTION[,OPTION]",
        help="select options (by option id or label) for a question; repeatable",
    )
    answer.add_argument(
        "--text",
        action="append",
        default=[],
        metavar="QUESTION=TEXT",
        help="free-text answer for a question; repeatable",
    )
    answer.add_argument("--reject", action="store_true", help="reject the whole bundle")
    answer.add_argument("--reason", default="", help="reason shown with a rejection")
    answer.add_argument("--json", action="store_true", help="print the raw JSON response")
    history = question_commands.add_parser(
        "history",
        help="the resolved questions you may see, newest first, with who answered, and those "
        "closed without an answer, with why",
    )
    history.add_argument(
        "--limit", type=int, default=20, help="show at most this many bundles (default 20)"
    )
    history.add_argument("--json", action="store_true", help="print the raw JSON bundles")
    history.add_argument(
        "--answered-only",
        action="store_true",
        help="leave out the questions closed without an answer (superseded, session ended, "
        "expired, cancelled)",
    )
    server_commands(
        (list_questions, _questions_list),
        (answer, _questions_answer),
        (history, _questions_history),
    )


def _token(args: argparse.Namespace) -> str:
    """``--token``, else a hidden prompt when ``--ask-token`` asks for one, else
    ``CLARION_TOKEN``, else none."""
    if args.token:
        return str(args.token)
    if args.ask_token:
        if not sys.stdin.isatty():
            raise CliError("--ask-token needs an interactive terminal; set CLARION_TOKEN instead")
        entered = getpass.getpass("Clarion token: ").strip()
        if not entered:
            raise CliError("no token entered")
        return entered
    return os.environ.get("CLARION_TOKEN") or ""


def client_of(args: argparse.Namespace) -> ClarionClient:
    """The REST client a server command's flags (``--url``, the token) name."""
    url = args.url or os.environ.get("CLARION_URL") or DEFAULT_URL
    return ClarionClient(url, token=_token(args))


def _questions_list(args: argparse.Namespace) -> int:
    bundles = client_of(args).pending(workspace_id=args.workspace)
    body = {"bundles": bundles, "count": len(bundles)}
    return print_listing(
        args, bundles, json_body=body, empty="No pending questions.", print_item=_print_pending
    )


def _print_pending(bundle: dict[str, Any]) -> None:
    print(
        f"{bundle['pending_id']}  task {bundle['task_id']}  session {bundle['session_id']}  "
        f"waiting {bundle['age_seconds']}s"
    )
    if bundle["context"]:
        print(f"  context: {bundle['context']}")
    for question in bundle["questions"]:
        title = f"[{question['title']}] " if question["title"] else ""
        print(f"  {question['question_id']}: {title}{question['prompt']} ({question['status']})")
        for option in question["options"]:
            print(f"      {option['option_id']}: {option['label']} — {option['description']}")


def _pairs(values: Sequence[str], flag: str) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise CliError(f"{flag} expects QUESTION=VALUE, got {value!r}")
        pairs.append((key, rest))
    return pairs


def _answers_body(args: argparse.Namespace, client: ClarionClient) -> tuple[dict[str, Any], bool]:
    """The respond body, and whether the bundle was found pending (labels resolved)."""
    selections = _pairs(args.select, "--select")
    texts = _pairs(args.text, "--text")
    if args.reject:
        if selections or texts:
            raise CliError("--reject cannot be combined with --select or --text")
        return {"rejected": True, "reject_reason": args.reason}, False
    if args.reason:
        raise CliError("--reason only goes with --reject")
    if not selections and not texts:
        raise CliError("give --select and/or --text for each question, or --reject")
    bundle = client.find_pending(args.pending_id)
    questions = {q["question_id"]: q for q in bundle["questions"]} if bundle else {}
    if questions:
        for question_id, _ in (*selections, *texts):
            if question_id not in questions:
                raise CliError(
                    f"bundle {args.pending_id} has no question {question_id!r}; its questions "
                    f"are {', '.join(questions)} (see `clarion questions list`)"
                )
    answers: dict[str, dict[str, Any]] = {}
    for question_id, value in selections:
        entry = answers.setdefault(question_id, {"question_id": question_id})
        wanted = [part.strip() for part in value.split(",") if part.strip()]
        entry["selected_options"] = [
            _option_id(questions.get(question_id), question_id, part) for part in wanted
        ]
    for question_id, value in texts:
        answers.setdefault(question_id, {"question_id": question_id})["custom_text"] = value
    if questions:
        # N6: one entry per question; unanswered questions are sent as empty entries (N7).
        for question_id in questions:
            answers.setdefault(question_id, {"question_id": question_id})
    return {"answers": list(answers.values())}, bundle is not None


def _option_id(question: dict[str, Any] | None, question_id: str, wanted: str) -> str:
    if question is None:
        return wanted
    for option in question["options"]:
        if wanted == option["option_id"]:
            return wanted
    matches = [o["option_id"] for o in question["options"] if o["label"].lower() == wanted.lower()]
    if len(matches) == 1:
        return str(matches[0])
    raise CliError(f"question {question_id} has no option with id or label {wanted!r}")


def _questions_answer(args: argparse.Namespace) -> int:
    client = client_of(args)
    body, found = _answers_body(args, client)
    try:
        result = client.respond(args.pending_id, body)
    except ClientError as exc:
        if exc.status == 409 and exc.closed_reason:
            # Issue #30: one line saying why, not a bare 409.
            why = CLOSED_WHY.get(exc.closed_reason, exc.closed_reason)
            raise CliError(
                f"{args.pending_id} was closed without an answer ({why}); nothing was recorded"
            ) from exc
        if not found and not args.reject and exc.status == 400:
            # Labels and the question list come from the pending list; a settled (or
            # invisible) bundle is not in it, so nothing could be filled in.
            raise CliError(
                f"{exc} (the bundle is not pending, so labels could not be looked up: "
                "give option ids and an entry for every question)"
            ) from exc
        raise
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    response = result["response"]
    who = "you answered it" if result["claimed"] else "it was already settled; this is the winner's"
    print(f"{args.pending_id}: {result['status']} ({who})")
    _print_response(response)
    return 0


def _print_response(response: dict[str, Any], prompts: dict[str, str] | None = None) -> None:
    """A response's rejection line and one line per answer (selected option ids, then the
    free text as JSON), after its question's prompt when ``prompts`` gives them."""
    if response["rejected"]:
        print(
            "  rejected" + (f": {response['reject_reason']}" if response["reject_reason"] else "")
        )
    for answer in response["answers"]:
        parts = [*answer["selected_options"]]
        if answer["custom_text"]:
            parts.append(json.dumps(answer["custom_text"], ensure_ascii=False))
        given = ", ".join(parts) or "(no answer)"
        if prompts is None:
            print(f"  {answer['question_id']}: {given}")
        else:
            prompt = prompts.get(answer["question_id"], "")
            print(f"  {answer['question_id']}: {prompt} → {given}")


def _questions_history(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise CliError("--limit must be at least 1")
    bundles = client_of(args).resolved(at_most=args.limit, closed=not args.answered_only)
    body = {"bundles": bundles, "count": len(bundles)}
    return print_listing(
        args, bundles, json_body=body, empty="No resolved questions.", print_item=_print_resolved
    )


def _print_resolved(bundle: dict[str, Any]) -> None:
    if bundle["status"] == "closed":  # issue #30
        why = CLOSED_WHY.get(bundle["closed_reason"], bundle["closed_reason"])
        print(f"{bundle['closed_at']}  {bundle['pending_id']}  closed without an answer: {why}")
        for question in bundle["questions"]:
            print(f"  {question['question_id']}: {question['prompt']}")
        return
    who = bundle["resolved_by"]
    name = who["display_name"] or who["identity_id"] or "unknown"
    print(
        f"{bundle['resolved_at']}  {bundle['pending_id']}  {bundle['status']}  "
        f"by {name} ({who['kind']}) via {who['surface']}"
    )
    prompts = {q["question_id"]: q["prompt"] for q in bundle["questions"]}
    _print_response(bundle["response"], prompts)

"""The claim's bound values. What every transition writes is decided once, in
:mod:`clarion.domain.transitions`; this module only turns the claim's responses into the
parameters of its one conditional ``UPDATE`` (:func:`clarion.adapters.sql.statements.claim`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from clarion.domain.model import ANSWERED, Answer
from clarion.domain.transitions import RESPONSE, claim_values

# What ``json.dumps(value, ensure_ascii=False)`` builds on every call, built once (the claim
# encodes every response, issue #34).
_JSON: Final = json.JSONEncoder(ensure_ascii=False)


def claim_parameters(
    terminal: str, responses: Mapping[str, Answer] | None
) -> tuple[int, dict[str, Any]]:
    """Bound values of :func:`clarion.adapters.sql.statements.claim`: the number of answers
    and ``question_<n>``/``response_<n>`` pairs (the stored response shape, as JSON text)."""
    if terminal != ANSWERED:
        return 0, {}
    params: dict[str, Any] = {}
    for n, (question_id, answer) in enumerate(sorted((responses or {}).items())):
        params[f"question_{n}"] = question_id
        params[f"response_{n}"] = _JSON.encode(claim_values(terminal, answer)[RESPONSE])
    return len(params) // 2, params

"""A bundle's answer form: its fields, their one naming scheme, the one parser (issue #32).

Every surface that shows a bundle as a form — the answer-link page, the Slack modal, the MCP
elicitation form, the inbox — offers the same fields. Their names, for the question at position
``i`` (0-based, in the bundle's D2 order)::

    q<i>_options   the option ids chosen (any number, N8 constrains membership only)
    q<i>_text      free text, at most 2,000 code points (N8b)
    skip           a boolean: reject the whole bundle instead (N8a)
    reason         the rejection's reason, at most 2,000 code points (N8b)

and an error about the form as a whole names :data:`FORM`. A surface renders
:meth:`AnswerForm.fields` in its medium, turns what its medium submitted into *flat field
values* — a mapping from these names to a string (text, reason), a string or a sequence of
strings (options) and a boolean (skip); an absent name is empty — and hands them to
:meth:`AnswerForm.parse`. Every refusal is a :class:`FormError` whose ``field`` is one of these
names, so each surface places a message next to the field it names in one way.

Validity is the domain's (:func:`clarion.domain.outcome.validate_outcome`, N6–N8b): the
parser checks what only a form can get wrong (types, nothing chosen, text over the limit, in a
person's words) and then validates the outcome, translating the JSON path of its ``field``
(``answers[1].custom_text``) into the form's name for it (``q1_text``) with :func:`field_of`.
Surfaces whose medium cannot keep these names (the MCP schema's pinned ``q1_choice``) map
their own names onto them and back.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

import attrs

from clarion.domain.errors import InvalidOutcome
from clarion.domain.model import MAX_TEXT_CODE_POINTS, Answer, Outcome, Question
from clarion.domain.outcome import validate_outcome

SKIP: Final = "skip"
REASON: Final = "reason"
FORM: Final = "form"
"""The field an error about the whole form names (nothing chosen, a count mismatch, …)."""

NOTHING_CHOSEN: Final = "Choose an option or write an answer first, or skip the question."
TOO_LONG: Final = "At most 2,000 characters, please (this has {count})."

_NAME = re.compile(r"q(\d+)_(options|text)")
_ANSWER_PATH = re.compile(r"answers\[(\d+)\](?:\.(\w+))?")


def options_field(index: int) -> str:
    """The field holding the options chosen for the question at ``index`` (0-based)."""
    return f"q{index}_options"


def text_field(index: int) -> str:
    """The field holding the free text for the question at ``index`` (0-based)."""
    return f"q{index}_text"


class FieldKind(enum.Enum):
    """What a field holds, so a renderer knows which control to draw."""

    OPTIONS = "options"
    TEXT = "text"
    SKIP = "skip"
    REASON = "reason"


@attrs.frozen
class FormField:
    """One field of a bundle's form; ``index`` is its question's position, None for the
    bundle-wide ``skip`` and ``reason``."""

    name: str
    kind: FieldKind
    index: int | None = None


class FormError(InvalidOutcome):
    """A submitted form was refused. ``field`` names the form field (:data:`FORM` for the form
    as a whole); ``errors`` holds every field error found, keyed by field name, the first being
    ``field`` and ``message`` (a form reports all over-long texts at once)."""

    def __init__(
        self, message: str, *, field: str, errors: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message, field=field)
        self.errors: Mapping[str, str] = dict(errors) if errors else {field: message}


def question_of(field: str) -> int | None:
    """The question position a field name belongs to (``q1_text`` → 1), None for ``skip``,
    ``reason`` and :data:`FORM`."""
    named = _NAME.fullmatch(field)
    return int(named.group(1)) if named is not None else None


def field_of(path: str, question_count: int) -> str:
    """The form field a validation error's ``field`` names: a form field name is itself, a
    JSON path into an outcome (``answers[i].selected_options``, ``reject_reason``) is the
    form's name for that value, and anything else (``answers``, ``question_id``) is
    :data:`FORM`."""
    if path in (SKIP, REASON, FORM):
        return path
    if path == "reject_reason":
        return REASON
    named = _NAME.fullmatch(path)
    if named is not None and int(named.group(1)) < question_count:
        return path
    answer = _ANSWER_PATH.fullmatch(path)
    if answer is not None and int(answer.group(1)) < question_count:
        index = int(answer.group(1))
        return options_field(index) if answer.group(2) == "selected_options" else text_field(index)
    return FORM


@attrs.frozen
class FormValues:
    """What a form submitted, read into per-question tuples (kept to re-render the form)."""

    selected: tuple[tuple[str, ...], ...] = ()
    texts: tuple[str, ...] = ()
    skip: bool = False
    reason: str = ""

    def options_at(self, index: int) -> tuple[str, ...]:
        return self.selected[index] if index < len(self.selected) else ()

    def text_at(self, index: int) -> str:
        return self.texts[index] if index < len(self.texts) else ""

    def is_empty(self) -> bool:
        """Nothing chosen, nothing written (blank text counts as nothing), no skip."""
        return not self.skip and not any(self.selected) and not any(t.strip() for t in self.texts)

    def outcome(self, questions: Sequence[Question]) -> Outcome:
        """A rejection when ``skip`` is set, else one answer per question (either part may be
        empty); not validated."""
        if self.skip:
            return Outcome.reject(self.reason)
        return Outcome.answer(
            *(
                Answer(
                    question_id=question.id,
                    selected_options=self.options_at(index),
                    custom_text=self.text_at(index),
                )
                for index, question in enumerate(questions)
            )
        )


def _text(values: Mapping[str, object], name: str) -> str:
    value = values.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FormError("must be a string", field=name)
    return value


def _options(values: Mapping[str, object], name: str) -> tuple[str, ...]:
    value = values.get(name)
    if value is None:
        return ()
    if isinstance(value, str):  # one choice, as a single-select control sends it
        return (value,) if value else ()
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return tuple(str(item) for item in value if item)
    raise FormError("must be a list of option ids", field=name)


def _skip(values: Mapping[str, object]) -> bool:
    value = values.get(SKIP)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise FormError("must be a boolean", field=SKIP)
    return value


@attrs.frozen
class AnswerForm:
    """The form of a bundle whose questions are ``questions`` (D2 order)."""

    questions: tuple[Question, ...]

    def fields(self) -> Iterator[FormField]:
        """Every field in display order: per question its options (when it offers any) and
        its text, then ``skip`` and ``reason``."""
        for index, question in enumerate(self.questions):
            if question.options:
                yield FormField(options_field(index), FieldKind.OPTIONS, index)
            yield FormField(text_field(index), FieldKind.TEXT, index)
        yield FormField(SKIP, FieldKind.SKIP)
        yield FormField(REASON, FieldKind.REASON)

    def field_of(self, path: str) -> str:
        """:func:`field_of` for this form."""
        return field_of(path, len(self.questions))

    def read(self, values: Mapping[str, object]) -> FormValues:
        """Flat field values as :class:`FormValues`; names the form does not have are ignored.

        Raises:
            FormError: a value has a type its field does not take (``field`` names it).
        """
        count = len(self.questions)
        return FormValues(
            selected=tuple(_options(values, options_field(i)) for i in range(count)),
            texts=tuple(_text(values, text_field(i)) for i in range(count)),
            skip=_skip(values),
            reason=_text(values, REASON),
        )

    def check(self, submitted: FormValues, *, require_answer: bool = True) -> Outcome:
        """The outcome ``submitted`` stands for, validated.

        Raises:
            FormError: a text over 2,000 code points (every such field, :data:`TOO_LONG`);
                nothing chosen, written or skipped when ``require_answer``
                (:data:`NOTHING_CHOSEN`, on :data:`FORM`); or the outcome breaks a rule of
                N6–N8b (the domain's message, on the field its path names).
        """
        texts = (
            [(REASON, submitted.reason)]
            if submitted.skip
            else [(text_field(i), submitted.text_at(i)) for i in range(len(self.questions))]
        )
        over = {
            name: TOO_LONG.format(count=f"{len(text):,}")
            for name, text in texts
            if len(text) > MAX_TEXT_CODE_POINTS
        }
        if over:
            name, message = next(iter(over.items()))
            raise FormError(message, field=name, errors=over)
        if require_answer and submitted.is_empty():
            raise FormError(NOTHING_CHOSEN, field=FORM)
        outcome = submitted.outcome(self.questions)
        try:
            validate_outcome(self.questions, outcome)
        except InvalidOutcome as exc:
            raise self.error(exc) from exc
        return outcome

    def parse(self, values: Mapping[str, object], *, require_answer: bool = True) -> Outcome:
        """:meth:`read` then :meth:`check`: the one parser from flat field values to a
        validated outcome.

        Raises:
            FormError: as :meth:`read` and :meth:`check`.
        """
        return self.check(self.read(values), require_answer=require_answer)

    def error(self, exc: InvalidOutcome) -> FormError:
        """``exc`` (a domain or form refusal) as a :class:`FormError` naming a form field."""
        if isinstance(exc, FormError):
            return exc
        return FormError(exc.message, field=self.field_of(exc.field))


__all__ = [
    "FORM",
    "NOTHING_CHOSEN",
    "REASON",
    "SKIP",
    "TOO_LONG",
    "AnswerForm",
    "FieldKind",
    "FormError",
    "FormField",
    "FormValues",
    "field_of",
    "options_field",
    "question_of",
    "text_field",
]

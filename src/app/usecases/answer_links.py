"""Signed single-use answer links (issue #17): what an e-mail recipient follows to answer.

:meth:`AnswerLinks.link_for` makes ``<base_url>/answer/<token>`` for one recipient and one
bundle. The token is URL-safe text ``<payload>.<signature>``: the payload (base64url JSON)
binds the recipient's user id, the pending id, an expiry (``CLARION_ANSWER_LINK_TTL``) and a
random nonce; the signature is HMAC-SHA256 under the first key of the ring
(``CLARION_ANSWER_LINK_KEYS``, read like ``CLARION_ELICITATION_KEYS``: the first key signs,
every key verifies, so a ring rotates by putting a new key first and dropping the old one
after the longest link lifetime; without a ring, one random key per process — links then stop
working at a restart and on other replicas). Nothing is stored when a link is made.

- :meth:`view` (the page a GET shows) never changes anything, so a mail scanner that follows
  the link answers nothing.
- :meth:`answer` (the page's POST) re-checks everything at use — signature, expiry, that the
  recipient is still an active user who may see the bundle — validates the outcome (N6–N8b),
  consumes the link durably (:class:`~clarion.ports.answer_links.AnswerLinkStore`, keyed by
  the nonce), and resolves through the one :meth:`Resolver.resolve` like every surface. A
  loser is shown the winner (R2). When the answer was not recorded and the bundle stays
  answerable (a retryable delivery failure, the store failing, the bundle no longer active),
  the use is released so the link can try again.

Every failure — a tampered, foreign or expired token, a deactivated recipient, one who lost
sight of the workspace, a bundle that is gone — is a page state, never an error, and changes
nothing.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import json
import os
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import attrs
import structlog

from clarion.app.usecases.resolve import Resolver
from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.errors import (
    ClaimError,
    DeliveryError,
    InvalidOutcome,
    NotActive,
    NotFound,
    failure_fields,
)
from clarion.domain.history import CLOSED_WHY
from clarion.domain.model import Identity, Outcome, Question, Resolution
from clarion.domain.outcome import validate_outcome
from clarion.domain.replay import replay_winner
from clarion.domain.resolved_by import Surface
from clarion.domain.rows import Bundle
from clarion.domain.signing import key_weakness
from clarion.ports.answer_links import AnswerLinkStore, LinkUse
from clarion.ports.claims import ClaimRepository
from clarion.ports.system import Clock
from clarion.ports.tokens import UserDirectory

log = structlog.get_logger(__name__)

ANSWER_PATH: Final = "/answer/"
DEFAULT_TTL: Final = timedelta(days=7)
MAX_TOKEN_LENGTH: Final = 2048  # far above any token link_for makes; longer text is refused
_VERSION: Final = 1
_LABEL: Final = b"clarion-answer-link-v1."  # keeps these signatures apart from any other use
_NONCE_BYTES: Final = 16
_KEY_BYTES: Final = 32
_B64_ALPHABET: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

LINK_FAILED: Final = "failed to record the use of an answer link"
LOAD_FAILED: Final = "failed to read the question of an answer link"
NOT_RECORDED: Final = "Your answer was not recorded. Please try again."


class LinkState(enum.StrEnum):
    """What an answer-link page shows."""

    OPEN = "open"  # the form: the bundle is answerable through this link
    RECORDED = "recorded"  # this link's answer won
    ANSWERED = "answered"  # someone answered (this link lost, or it was answered before)
    USED = "used"  # this link already answered, and no answer is visible now
    CLOSED = "closed"  # the bundle ended without an answer (expired, cancelled, moved on)
    EXPIRED = "expired"  # the link is past its expiry
    INVALID = "invalid"  # not a link this service made (tampered, truncated, other keys)
    UNAVAILABLE = "unavailable"  # the recipient may not answer it any more, or it is gone
    FAILED = "failed"  # the answer was not recorded; ``message`` says why
    SIGN_IN = "sign_in"  # an agent link opened by nobody signed in: sign in, then open it again


@attrs.frozen
class LinkPage:
    """Everything an answer-link page shows; which fields are set depends on ``state``.

    ``resolution`` is set for RECORDED and ANSWERED (the winner's, ``claimed`` True only for
    RECORDED); ``questions`` and ``context`` for every state that names the bundle;
    ``link_used`` when this link had already answered.
    """

    state: LinkState
    pending_id: str = ""
    questions: tuple[Question, ...] = ()
    context: str = ""
    resolution: Resolution | None = None
    expires_at: datetime | None = None
    link_used: bool = False
    message: str = ""


@attrs.frozen
class LinkClaims:
    """What a verified token says."""

    user_id: str
    synthetic: bool
    pending_id: str
    expires_at: datetime
    nonce: str
    agent: bool = False  # made for an MCP client's URL-mode elicitation (issue #31)


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    """The bytes of canonical unpadded base64url ``text``: the only spelling that decodes is
    the one :func:`_b64encode` writes. The last character of a 32-byte signature carries
    two unused bits, so four characters would otherwise decode to the same bytes (#29 S13)
    and a link would have four valid spellings.

    Raises:
        ValueError: not base64url, or not its canonical spelling.
    """
    if not text or not set(text) <= _B64_ALPHABET:
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64encode(data) != text:
        raise ValueError("not the canonical base64url spelling")
    return data


def _signature(key: bytes, payload: str) -> bytes:
    return hmac.new(key, _LABEL + payload.encode("ascii"), hashlib.sha256).digest()


@attrs.frozen
class LinkSigner:
    """Makes and verifies answer-link tokens under a key ring (``keys[0]`` signs, every key
    verifies)."""

    keys: tuple[bytes, ...]

    def __attrs_post_init__(self) -> None:
        if not self.keys:
            raise ValueError("an answer-link key ring needs at least one key")
        for position, key in enumerate(self.keys, start=1):
            weakness = key_weakness(key, minimum=_KEY_BYTES)
            if weakness is not None:
                raise ValueError(f"answer-link key {position} is {weakness}")

    def sign(self, claims: LinkClaims) -> str:
        body = {
            "v": _VERSION,
            "u": claims.user_id,
            "s": 1 if claims.synthetic else 0,
            "p": claims.pending_id,
            "e": int(claims.expires_at.timestamp()),
            "n": claims.nonce,
            **({"k": 1} if claims.agent else {}),
        }
        payload = _b64encode(json.dumps(body, separators=(",", ":")).encode())
        return f"{payload}.{_b64encode(_signature(self.keys[0], payload))}"

    def verify(self, token: str) -> LinkClaims | None:
        """The claims of a token one of the keys signed; None for anything else (nothing is
        parsed before the signature verifies)."""
        if len(token) > MAX_TOKEN_LENGTH:
            return None
        payload, dot, signature_text = token.partition(".")
        try:
            signature = _b64decode(signature_text) if dot else b""
            _b64decode(payload)
        except (ValueError, binascii.Error):
            return None
        if not any(hmac.compare_digest(_signature(key, payload), signature) for key in self.keys):
            return None
        try:
            body = json.loads(_b64decode(payload))
            return _claims(body)
        except (ValueError, TypeError, KeyError, OverflowError, binascii.Error):
            return None


def _claims(body: Any) -> LinkClaims:
    """Raises ValueError/TypeError/KeyError for a body of another shape or version."""
    if not isinstance(body, dict) or body["v"] != _VERSION:
        raise ValueError("unknown link version")
    user_id, pending_id, nonce = body["u"], body["p"], body["n"]
    expires, synthetic, kind = body["e"], body["s"], body.get("k", 0)
    texts = (user_id, pending_id, nonce)
    if not all(isinstance(text, str) and text for text in texts):
        raise TypeError("link fields must be text")
    if not isinstance(expires, int) or synthetic not in (0, 1) or kind not in (0, 1):
        raise TypeError("link expiry and kind must be integers")
    return LinkClaims(
        user_id=user_id,
        synthetic=synthetic == 1,
        pending_id=pending_id,
        expires_at=datetime.fromtimestamp(expires, UTC),
        nonce=nonce,
        agent=kind == 1,
    )


def _without_trailing_slash(url: str) -> str:
    return url.rstrip("/")


@attrs.frozen
class _Target:
    """A link that verified, for a recipient who may still see its bundle."""

    claims: LinkClaims
    identity: Identity
    bundle: Bundle


@attrs.define(kw_only=True)
class AnswerLinks:
    """Issues and serves signed single-use answer links (see the module).

    ``base_url`` is the public address people reach this service at (no trailing slash
    needed); ``keys`` the ring (empty: one random key held by this process); ``ttl`` how long
    a link stays valid; ``auth_enabled`` whether the service authenticates — a link made for
    the synthetic identity of a service without authentication stops working once it does.
    """

    _resolver: Resolver = attrs.field(alias="resolver")
    _claims: ClaimRepository = attrs.field(alias="claims")
    _users: UserDirectory = attrs.field(alias="users")
    _store: AnswerLinkStore = attrs.field(alias="store")
    _clock: Clock = attrs.field(alias="clock")
    _run: Runner = attrs.field(alias="runner")
    _base_url: str = attrs.field(alias="base_url", converter=_without_trailing_slash)
    _keys: tuple[bytes, ...] = attrs.field(default=(), alias="keys", repr=False)
    _ttl: timedelta = attrs.field(default=DEFAULT_TTL, alias="ttl")
    _auth_enabled: bool = attrs.field(default=True, alias="auth_enabled")
    _signer: LinkSigner = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self._ttl <= timedelta(0):
            raise ValueError("an answer link's lifetime must be positive")
        self._signer = LinkSigner(self._keys or (os.urandom(_KEY_BYTES),))

    @property
    def base_url(self) -> str:
        return self._base_url

    # -- issuing -------------------------------------------------------------------------

    def agent_link_for(self, asker: Identity, pending_id: str, *, ttl: timedelta) -> str:
        """A link for an MCP client's URL-mode elicitation (issue #31): like :meth:`link_for`
        for the asking identity, valid for ``ttl``, and — since the MCP specification forbids
        a URL that is pre-authenticated and requires the server to check who opens it — used
        only by a browser signed in as that identity while authentication is enabled
        (:meth:`view` and :meth:`answer` then take the ``viewer``). Its answer is recorded
        with the surface ``agent_client``.

        Raises:
            ValueError: as :meth:`link_for`, or ``ttl`` is not positive.
        """
        if ttl <= timedelta(0):
            raise ValueError("an answer link's lifetime must be positive")
        return self._link(asker, pending_id, ttl=ttl, agent=True)

    def link_for(self, recipient: Identity, pending_id: str) -> str:
        """An absolute URL of a signed, single-use answer link for this recipient.

        Nothing is read or stored: whether the recipient may answer is decided when the link
        is used. An internal caller (an e-mail route that acts for no user) gets a link for
        the synthetic identity while authentication is disabled — what every request is then
        (#29) — and stops working once it is enabled.

        Raises:
            ValueError: ``recipient`` is an internal caller while authentication is enabled
                (no user to bind), or ``pending_id`` is empty.
        """
        return self._link(recipient, pending_id, ttl=self._ttl, agent=False)

    def _link(self, recipient: Identity, pending_id: str, *, ttl: timedelta, agent: bool) -> str:
        if recipient.user_id is None and not self._auth_enabled:
            recipient = Identity.synthetic_admin()
        if recipient.user_id is None:
            raise ValueError("an answer link needs a recipient with a user id")
        if not pending_id:
            raise ValueError("an answer link needs a pending id")
        claims = LinkClaims(
            user_id=recipient.user_id,
            synthetic=recipient.synthetic,
            pending_id=pending_id,
            expires_at=self._clock.now() + ttl,
            nonce=secrets.token_urlsafe(_NONCE_BYTES),
            agent=agent,
        )
        return f"{self._base_url}{ANSWER_PATH}{self._signer.sign(claims)}"

    # -- using ---------------------------------------------------------------------------

    async def view(self, token: str, viewer: Identity | None = None) -> LinkPage:
        """What the link's page shows now to ``viewer`` (who the browser is signed in as, if
        anyone; only an agent link asks). Reads only: a GET never answers or consumes.

        Raises:
            ClaimError: the store failed (the page reports it; nothing changed).
        """
        target = await self._open(token, viewer)
        if isinstance(target, LinkPage):
            return target
        used = await self._run.guarded(LINK_FAILED, self._store.find, target.claims.nonce)
        return await self._current(target, link_used=used is not None)

    async def answer(
        self, token: str, outcome: Outcome, viewer: Identity | None = None
    ) -> LinkPage:
        """Answer (or reject) the link's bundle as its recipient, once (an agent link only for
        a ``viewer`` signed in as that recipient).

        Raises:
            InvalidOutcome: the outcome does not fit the bundle (N6–N8b); ``field`` names the
                part. The link is not consumed.
            ClaimError: the store failed before anything was recorded.
        """
        target = await self._open(token, viewer)
        if isinstance(target, LinkPage):
            return target
        claims = target.claims
        if await self._run.guarded(LINK_FAILED, self._store.find, claims.nonce) is not None:
            return await self._current(target, link_used=True)
        validate_outcome(target.bundle.questions, outcome)
        use = LinkUse(
            link_id=claims.nonce,
            pending_id=claims.pending_id,
            user_id=claims.user_id,
            used_at=self._clock.now(),
            expires_at=claims.expires_at,
        )
        if not await self._run.guarded(LINK_FAILED, self._store.consume, use):
            return await self._current(target, link_used=True)
        return await self._answer_once(target, outcome)

    async def _answer_once(self, target: _Target, outcome: Outcome) -> LinkPage:
        """The link is consumed: resolve, and release the use when nothing was recorded."""
        bundle = target.bundle
        base = _page(bundle)
        try:
            resolution = await self._resolve_as_recipient(target, outcome)
        except InvalidOutcome:
            await self._release(target)
            raise
        except NotFound:
            await self._release(target)
            return attrs.evolve(base, state=LinkState.UNAVAILABLE)
        except NotActive as exc:
            await self._release(target)
            why = CLOSED_WHY.get(exc.closed_reason, "")
            # Issue #30: why it closed, when the resolver's one re-read could tell.
            message = f"This question was closed without an answer: {why}. Nothing was recorded."
            return attrs.evolve(base, state=LinkState.CLOSED, message=message if why else "")
        except DeliveryError as exc:
            if exc.retryable:
                await self._release(target)
                return attrs.evolve(base, state=LinkState.FAILED, message=NOT_RECORDED)
            return attrs.evolve(base, state=LinkState.FAILED, message=str(exc))
        except ClaimError:
            await self._release(target)
            return attrs.evolve(base, state=LinkState.FAILED, message=NOT_RECORDED)
        log.info(
            "answer_link.used",
            pending_id=bundle.pending_id,
            claimed=resolution.claimed,
            status=resolution.status,
        )
        await self._purge()
        state = LinkState.RECORDED if resolution.claimed else LinkState.ANSWERED
        return attrs.evolve(base, state=state, resolution=resolution)

    async def _resolve_as_recipient(self, target: _Target, outcome: Outcome) -> Resolution:
        """The one place answer links resolve: the shared resolver, as the link's recipient
        (seams: the lead adds ``surface="email"`` here)."""
        surface = Surface.AGENT_CLIENT if target.claims.agent else Surface.EMAIL
        return await self._resolver.resolve(
            target.identity, target.claims.pending_id, outcome, surface=surface
        )

    async def _open(self, token: str, viewer: Identity | None) -> _Target | LinkPage:
        """Verify the token, its expiry, who opens an agent link, and its recipient, and read
        the bundle as them. Someone signed in as another user gets what a bundle they may not
        see gets (UNAVAILABLE); nobody signed in, the page asking them to (SIGN_IN)."""
        claims = self._signer.verify(token)
        if claims is None:
            return LinkPage(state=LinkState.INVALID)
        if self._clock.now() >= claims.expires_at:
            return LinkPage(state=LinkState.EXPIRED, expires_at=claims.expires_at)
        if claims.agent and self._auth_enabled:
            if viewer is None or viewer.user_id is None:
                return LinkPage(state=LinkState.SIGN_IN, expires_at=claims.expires_at)
            if viewer.user_id != claims.user_id:
                log.info("answer_link.foreign_viewer", pending_id=claims.pending_id)
                return LinkPage(state=LinkState.UNAVAILABLE)
        identity = await self._recipient(claims)
        if identity is None:
            return LinkPage(state=LinkState.UNAVAILABLE)
        try:
            bundle = await self._resolver.authorize_bundle(identity, claims.pending_id)
        except NotFound:
            return LinkPage(state=LinkState.UNAVAILABLE)
        return _Target(claims=claims, identity=identity, bundle=bundle)

    async def _recipient(self, claims: LinkClaims) -> Identity | None:
        """The recipient as they are now: an active user (with their current admin flag), or
        the synthetic identity while authentication stays disabled; None otherwise."""
        if claims.synthetic:
            return None if self._auth_enabled else Identity.synthetic_admin()
        user = await self._run.guarded(LOAD_FAILED, self._users.get_user, claims.user_id)
        if user is None or not user.active:
            return None
        return Identity.user(user.id, is_admin=user.is_admin, display_name=user.name)

    async def _current(self, target: _Target, *, link_used: bool) -> LinkPage:
        """The bundle's state as the page shows it: the winner, the form, or a message."""
        bundle = target.bundle
        base = attrs.evolve(_page(bundle), expires_at=target.claims.expires_at)
        winner = replay_winner(bundle.pending_id, bundle.rows)
        if winner is not None:
            return attrs.evolve(
                base, state=LinkState.ANSWERED, resolution=winner, link_used=link_used
            )
        if link_used:
            return attrs.evolve(base, state=LinkState.USED, link_used=True)
        active = await self._run.guarded(
            StoreFailure(LOAD_FAILED, pending_id=bundle.pending_id),
            self._claims.active_pending_ids,
            bundle.session_id,
        )
        state = LinkState.OPEN if bundle.pending_id in active else LinkState.CLOSED
        return attrs.evolve(base, state=state)

    async def _release(self, target: _Target) -> None:
        try:
            await self._run(self._store.release, target.claims.nonce)
        except Exception as exc:  # noqa: BLE001 - the link stays used; the page says why
            log.warning(
                "answer_link.release_failed",
                pending_id=target.claims.pending_id,
                **failure_fields(exc),
            )

    async def _purge(self) -> None:
        """Forget the uses of expired links (their tokens no longer verify anyway)."""
        try:
            await self._run(self._store.purge, self._clock.now())
        except Exception as exc:  # noqa: BLE001 - the next answer retries
            log.warning("answer_link.purge_failed", **failure_fields(exc))


def _page(bundle: Bundle) -> LinkPage:
    return LinkPage(
        state=LinkState.OPEN,
        pending_id=bundle.pending_id,
        questions=bundle.questions,
        context=bundle.context,
    )


__all__ = [
    "ANSWER_PATH",
    "DEFAULT_TTL",
    "AnswerLinks",
    "LinkClaims",
    "LinkPage",
    "LinkSigner",
    "LinkState",
]

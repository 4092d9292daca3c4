"""API keys: bearer tokens bound to the scopes they may use and the authority their writes carry.

Storage decision: keys are a **tape projection** (``server_keys``), not a side table. Creating
or revoking a key is an event on the tape in the reserved scope :data:`KEYS_SCOPE`; the
``api_keys`` table is derived from those events like every other projection. That gives keys
the same guarantees as the rest of the store for free — both backends, one transaction per
change, an audit trail (who created which key, when), ``rebuild`` recreating the table — and
needs no backend-specific DDL. Only the SHA-256 digest of a key is ever stored; the key itself
is shown once, by :meth:`KeyRing.create`.

Key format: ``vk_<key id: 12 hex>_<secret: 64 hex>``. The key id is public (it is how a key is
listed, revoked and looked up); the secret carries 256 bits of entropy, so an unsalted SHA-256
digest is enough (no password-hashing KDF needed: nothing to brute-force). Lookup is by key id,
then the digests are compared in constant time.

Scopes beginning with ``veil:`` are reserved for Veil's own records (the key ring lives in
``veil:keys``); no key may be bound to one, so no request can read or erase them.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast, get_args

from veil.clock import Clock, SystemClock, parse_time
from veil.tape import Column, Event, JSONValue, Op, Patch, Put, Store, Table
from veil.tape.codec import Ident
from veil.tape.events import validate_scope
from veil.tape.kinds import EventKind, catalogue
from veil.tape.recorder import Recorder

Authority = Literal["user", "assistant", "tool"]
"""Who a key's writes are attributed to (``Memory.remember(author=…)``). ``system`` and
``third_party`` are deliberately not grantable: a server client is never the system, and
third-party text arrives as evidence authored by one of these."""

AUTHORITIES: tuple[Authority, ...] = get_args(Authority)
KEYS_SCOPE = "veil:keys"
RESERVED_SCOPE_PREFIX = "veil:"
KEY_PREFIX = "vk_"
_KEY = re.compile(r"^vk_([0-9a-f]{12})_([0-9a-f]{64})$")
KEYS_TABLE = "api_keys"
MAX_LABEL_CHARS = 100


ServerKind = Literal["server.key_created", "server.key_revoked"]


@dataclass(frozen=True)
class KeyCreated:
    key_id: Ident
    digest: Ident
    scopes: tuple[str, ...]
    authority: Authority
    admin: bool
    label: str | None = None


@dataclass(frozen=True)
class KeyRevoked:
    key_id: Ident


KEY_CREATED = EventKind("server.key_created", KeyCreated)
KEY_REVOKED = EventKind("server.key_revoked", KeyRevoked)
KINDS = catalogue(ServerKind, KEY_CREATED, KEY_REVOKED)


class KeyRequestError(ValueError):
    """A key request that cannot be honoured (bad scope, authority or key id)."""


@dataclass(frozen=True)
class ApiKey:
    """A key's grant, as stored (never the key itself)."""

    key_id: str
    scopes: frozenset[str]
    authority: Authority
    admin: bool
    created_at: datetime
    revoked: bool = False
    label: str | None = None

    def may_use(self, scope: str) -> bool:
        """True when this key is live and bound to ``scope`` (reserved scopes never are)."""
        return not self.revoked and scope in self.scopes and not is_reserved(scope)


@dataclass(frozen=True)
class NewKey:
    """The result of :meth:`KeyRing.create`: the secret key (shown once) and its grant."""

    token: str
    key: ApiKey


def is_reserved(scope: str) -> bool:
    return scope.startswith(RESERVED_SCOPE_PREFIX)


def digest_of(token: str) -> str:
    """The stored form of a key: hex SHA-256 of the whole token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_token(token: str) -> str | None:
    """The key id of a well-formed token, else None (the format check costs no store read)."""
    match = _KEY.match(token)
    return match.group(1) if match else None


class KeysProjection:
    """``server.key_created`` {key_id, digest, scopes, authority, admin, label} puts a row;
    ``server.key_revoked`` {key_id} marks it revoked. Pure: ops come from the event alone."""

    name = "server_keys"
    version = 1
    tables = (
        Table(
            KEYS_TABLE,
            (
                Column("key_id", "text", nullable=False),
                Column("digest", "text", nullable=False),
                Column("scopes", "json", nullable=False),
                Column("authority", "text", nullable=False),
                Column("admin", "bool", nullable=False),
                Column("label", "text"),
                Column("created_at", "time", nullable=False),
                Column("revoked_at", "time"),
            ),
            key=("key_id",),
        ),
    )
    text_indexes = ()
    vector_indexes = ()

    def apply(self, event: Event) -> list[Op]:
        if event.scope != KEYS_SCOPE:
            return []
        p = event.payload
        if event.kind == KEY_CREATED.name:
            return [
                Put(
                    KEYS_TABLE,
                    {
                        "scope": KEYS_SCOPE,
                        "key_id": p["key_id"],
                        "digest": p["digest"],
                        "scopes": p["scopes"],
                        "authority": p["authority"],
                        "admin": p["admin"],
                        "label": p.get("label"),
                        "created_at": event.at.isoformat(),
                        "revoked_at": None,
                    },
                    keep_existing=True,
                )
            ]
        if event.kind == KEY_REVOKED.name:
            return [
                Patch(
                    KEYS_TABLE,
                    {"scope": KEYS_SCOPE, "key_id": p["key_id"]},
                    {"revoked_at": event.at.isoformat()},
                )
            ]
        return []


class KeyRing:
    """Create, verify, list and revoke keys on a store (registers :class:`KeysProjection`).

    Thread-safe as far as the store is: every method is one store call or one append. Key
    rings on one store object share its projection (registered once).
    """

    def __init__(self, store: Store, *, clock: Clock | None = None) -> None:
        self.store = store
        self.clock: Clock = clock or SystemClock()
        self._recorder = Recorder(store, KEYS_SCOPE, "admin", self.clock, id_prefix="ky")
        store.register(KeysProjection())

    def create(
        self,
        scopes: Iterable[str],
        *,
        authority: Authority = "user",
        admin: bool = False,
        label: str | None = None,
    ) -> NewKey:
        """Mint a key bound to ``scopes`` (at least one; none reserved) and ``authority``."""
        bound = sorted(set(scopes))
        if not bound:
            raise KeyRequestError("a key needs at least one --scope")
        for scope in bound:
            try:
                validate_scope(scope)
            except ValueError as exc:
                raise KeyRequestError(f"bad scope {scope!r}: {exc}") from None
            if is_reserved(scope):
                raise KeyRequestError(
                    f"scope {scope!r} is reserved (prefix {RESERVED_SCOPE_PREFIX!r})"
                )
        if authority not in AUTHORITIES:
            raise KeyRequestError(f"authority must be one of {', '.join(AUTHORITIES)}")
        if label is not None and (
            not label.strip()
            or len(label) > MAX_LABEL_CHARS
            or any(ord(ch) < 32 or ord(ch) == 127 for ch in label)
        ):
            raise KeyRequestError(
                f"--label must be one line of at most {MAX_LABEL_CHARS} printable characters"
            )
        key_id = secrets.token_hex(6)
        token = f"{KEY_PREFIX}{key_id}_{secrets.token_hex(32)}"
        payload = KeyCreated(key_id, digest_of(token), tuple(bound), authority, admin, label)
        created = self._recorder.record(KEY_CREATED, payload)
        key = ApiKey(key_id, frozenset(bound), authority, admin, created.at, False, label)
        return NewKey(token, key)

    def verify(self, token: str) -> ApiKey | None:
        """The live grant of ``token``, or None for a malformed, unknown or revoked key."""
        key_id = parse_token(token)
        if key_id is None:
            return None
        rows = self.store.fetch(KEYS_TABLE, scope=KEYS_SCOPE, where={"key_id": key_id})
        if not rows:
            return None
        row = rows[0]
        if not hmac.compare_digest(str(row["digest"]), digest_of(token)):
            return None
        key = _key_from_row(row)
        return None if key.revoked else key

    def list(self) -> list[ApiKey]:
        """Every key ever created (revoked ones flagged), oldest first."""
        rows = self.store.fetch(KEYS_TABLE, scope=KEYS_SCOPE, order_by=["created_at"])
        return [_key_from_row(r) for r in rows]

    def revoke(self, key_id: str) -> bool:
        """Revoke ``key_id``; False when no such live key exists."""
        rows = self.store.fetch(KEYS_TABLE, scope=KEYS_SCOPE, where={"key_id": key_id})
        if not rows or rows[0]["revoked_at"] is not None:
            return False
        self._recorder.record(KEY_REVOKED, KeyRevoked(key_id))
        return True


def _key_from_row(row: dict[str, JSONValue]) -> ApiKey:
    scopes = cast(list[str], row["scopes"])
    return ApiKey(
        key_id=str(row["key_id"]),
        scopes=frozenset(scopes),
        authority=cast(Authority, row["authority"]),
        admin=bool(row["admin"]),
        created_at=parse_time(str(row["created_at"])),
        revoked=row["revoked_at"] is not None,
        label=None if row["label"] is None else str(row["label"]),
    )

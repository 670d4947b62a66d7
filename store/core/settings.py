"""Store settings, declared: each name with its type, default and meaning (pure).

Every setting is declared here with its type, default and meaning (docs/settings.md lists
them). ``evstore config`` shows and changes them; an unknown name or a value of the wrong type
is ``config.unknown`` / ``config.value``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import CorruptionError, InputError

__all__ = [
    "SETTINGS",
    "Setting",
    "check_setting_value",
    "decode_stored",
    "parse_setting_value",
    "setting",
]


@dataclass(frozen=True)
class Setting:
    """A declared setting: its ``name``, Python ``type`` (bool, int, str or list), default, help.

    ``minimum``: the smallest value an int setting takes (None: no bound).
    """

    name: str
    type: type
    default: Any
    help: str
    minimum: int | None = None


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "blobs.backend",
            str,
            "inline",
            "Where the bytes of blobs larger than blobs.inline_max go: inline (the database), "
            "file:DIR or s3://BUCKET/PREFIX[?endpoint=URL&region=R]; credentials come from "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, never from the store. Blobs already "
            "stored stay where they are.",
        ),
        Setting(
            "blobs.deletion_delay_seconds",
            int,
            3600,
            "Seconds gc waits between deleting a blob's row and deleting its bytes from the "
            "blob backend (a put of the same bytes meanwhile cancels the deletion).",
            minimum=0,
        ),
        Setting(
            "blobs.orphan_grace_seconds",
            int,
            86400,
            "Seconds an object in a blob backend that no row names is left alone before check "
            "reports it and gc deletes it: longer than the slowest upload (a put uploads its "
            "bytes before its row commits).",
            minimum=0,
        ),
        Setting(
            "blobs.timeout_seconds",
            int,
            5,
            "Seconds an S3 blob backend may take to connect, and to send the next bytes of an "
            "answer, before the request is retried; a hung object server is blobs.unreachable "
            "(retryable) after about twice this.",
            minimum=1,
        ),
        Setting(
            "blobs.inline_max",
            int,
            1 << 20,
            "Blobs up to this many bytes stay in the database whatever blobs.backend says.",
            minimum=0,
        ),
        Setting(
            "fragments.revision_extension_keys",
            list,
            ["evstore.document_revision"],
            "Extension keys whose value carries a revision_checksum (templiqx v1alpha1, "
            "'Document revision checksum extension'). The contract's illustrative "
            "example.document_revision counts only when listed here.",
        ),
        Setting(
            "gc.lease-seconds",
            int,
            3600,
            "Seconds an object stays protected from gc after a write stored or referred to it, "
            "or an upload's existence check found it (evstore retention.missing, the server's "
            "missing request with an ingest token). 0: no lease (objects are collectable as "
            "soon as no root reaches them). Setting it also shortens the leases already taken "
            "to end at most that many seconds from now.",
            minimum=0,
        ),
        Setting(
            "log.key_file",
            str,
            "",
            "Path of the log's private key file (0600) that `evstore log checkpoint` signs "
            "with, when neither --key nor EVSTORE_LOG_KEY names one (docs/log.md#keys).",
        ),
        Setting(
            "log.witness_policy",
            str,
            "",
            "The log's witnesses and quorum, a policy text (`log`, `witness NAME VKEY URL`, "
            "`quorum N` lines; docs/log.md#witnesses): after signing a checkpoint the server "
            "asks each witness with a URL to cosign it. Empty: no witness is asked.",
        ),
        Setting(
            "manifests.accept_unverified_phase",
            bool,
            False,
            "Accept orbidocs projection-revision-2 manifests whose phase cannot be verified "
            "(the phase schema is not public), recording a warning.",
        ),
        Setting(
            "packages.strict_context_bytes",
            bool,
            False,
            "Reject (instead of warn about) an insonic package whose context.bytes/tokens do "
            "not match the compact JSON length of its context.",
        ),
        Setting(
            "witness.logs",
            list,
            [],
            "Verifier keys of the logs this store witnesses (C2SP tlog-witness): `evstore serve "
            "--witness-key` cosigns their checkpoints at POST P/add-checkpoint "
            "(docs/log.md#witnesses).",
        ),
    )
}


def setting(settings: Mapping[str, Any] | None, name: str) -> Any:
    """The typed value of setting ``name`` in a loaded settings map (the one way to read one).

    Args:
        settings: the map :func:`load_settings` returned (values already typed), or None
            for "no store": every setting then has its default.
        name: a declared setting name.

    Raises:
        KeyError: ``name`` is not declared (a programming error).
    """
    declared = SETTINGS[name]
    if settings is None or name not in settings:
        return declared.default
    return settings[name]


def check_setting_value(name: str, value: Any) -> Any:
    """``value`` if it has setting ``name``'s declared type, for writes through the API.

    Raises:
        InputError: ``config.unknown`` (no such setting) or ``config.value`` (wrong type:
            ``True`` is not an int, ``1`` is not a bool, a list holds only non-empty strings).
        A list comes back with each item once, in first-seen order.
    """
    if name not in SETTINGS:
        raise InputError(
            f"no setting {name!r}; known: {', '.join(sorted(SETTINGS))}", code="config.unknown"
        )
    s = SETTINGS[name]
    ok = (
        isinstance(value, list) and all(isinstance(x, str) and x for x in value)
        if s.type is list
        else type(value) is s.type
    )
    if not ok:
        raise InputError(
            f"setting {name} takes a {s.type.__name__}, not {value!r}", code="config.value"
        )
    _at_least(s, value)
    return list(dict.fromkeys(value)) if s.type is list else value


def _at_least(s: Setting, value: Any) -> None:
    """Refuse an int below the setting's minimum (``config.value``)."""
    if s.minimum is not None and value < s.minimum:
        raise InputError(
            f"setting {s.name} takes at least {s.minimum}, not {value!r}", code="config.value"
        )


def decode_stored(name: str, raw: Any) -> Any:
    """A stored setting value (its JSON text), refusing anything evstore would not have written.

    Raises:
        CorruptionError: ``corruption.setting``.
    """
    s = SETTINGS[name]
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        value = _INVALID
    ok = (
        isinstance(value, list) and all(isinstance(x, str) and x for x in value)
        if s.type is list
        else type(value) is s.type
    )
    if not ok:
        raise CorruptionError(
            f"the stored setting {name} is not a {s.type.__name__}: {str(raw)[:60]!r};"
            f" set it again with `evstore config {name} VALUE`",
            code="corruption.setting",
        )
    return value


_INVALID = object()


def parse_setting_value(name: str, text: str) -> Any:
    """Parse a command-line value for setting ``name``.

    bool takes true/false (also 1/0, yes/no); list takes a JSON array of strings or a
    comma-separated list (a repeated item is kept once, in first-seen order); int takes a
    decimal integer.

    Raises:
        InputError: ``config.unknown`` or ``config.value``.
    """
    if name not in SETTINGS:
        raise InputError(
            f"no setting {name!r}; known: {', '.join(sorted(SETTINGS))}", code="config.unknown"
        )
    s = SETTINGS[name]
    t = text.strip()
    if s.type is bool:
        low = t.lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
    elif s.type is int:
        try:
            number = int(t)
        except ValueError:
            pass
        else:
            _at_least(s, number)
            return number
    elif s.type is list:
        if t.startswith(("[", "{")):
            try:
                v = json.loads(t)
            except ValueError:
                v = None
            if isinstance(v, list) and all(isinstance(x, str) and x for x in v):
                return list(dict.fromkeys(v))
        else:
            return list(dict.fromkeys(p.strip() for p in t.split(",") if p.strip()))
    elif s.type is str:
        return t
    raise InputError(f"setting {name} takes a {s.type.__name__}, not {text!r}", code="config.value")

"""Corpus passage evidence manifests, orbidocs v1: the pure rules, then the ``manifest`` kind.

Implements ``../shared/contracts/orbidocs-corpus-passage-evidence-manifest-v1.md`` and the facts
in ``../shared/contracts/README.md``. A manifest lists the evidence one Agent passage reads
(items by exact ref and digest), the limit it was rendered under (``bytes/max``) and the
rendered content by address (``content/ref``, ``content/digest``, ``content/size-bytes``). Its
own address ``manifest/ref`` is the SHA-256 of its RFC 8785 form without that member.

The shape is checked against evstore's own JSON Schema, ``schemas/orbidocs-manifest-v1.schema.json``
(2020-12, self-contained, formats asserted, never fetched from a network). On projection
revision 1 without ``phase`` it accepts exactly what at least one of the two published upstream
schema revisions accepts (tests/contracts/test_manifests_schema_diff.py). It also states the
contract text's newer projection revision 2. Subschemas named ``rule-*`` carry one contract rule
each; a fault under one of them gets that rule's code instead of ``manifest.schema``.

Codes (``code`` -> meaning; the rule is ``RULES[code]``)::

    manifest.schema                 a JSON Schema fault: missing or unexpected member, wrong
                                    type, pattern, bound, enum or const (pointer: the instance
                                    location; an unexpected member: the member itself)
    manifest.rule-1                 projection revision 1 with no item (/items) or with a
                                    phase (/phase): contract Rule 1
    manifest.phase-missing          projection revision 2 without a phase object
    manifest.phase-unverifiable     projection revision 2: its phase (corpus-task-pack-phase.v1)
                                    is not public, so "every phase basis is required, included
                                    and exact" cannot be checked. An error by default; a warning
                                    when the setting ``manifests.accept_unverified_phase`` is on
    manifest.item-required-excluded an item with required: true has included: false
    manifest.item-omitted-reason    an item with included: false has no omitted/reason
    manifest.item-included-reason   an item with included: true carries omitted/reason
    manifest.item-artifact-execution an item of kind artifact has no execution/ref
    manifest.ref-not-exact          a ref has a ``:``-separated segment equal to ``latest``
    manifest.review-target          review/target's candidate/digest names no item of kind
                                    candidate that is required and included
    manifest.self-address           manifest/ref differs from the recomputed address
    manifest.content-missing        (store) the rendered content is neither stored nor supplied
    manifest.content-digest         (store) the content's SHA-256 differs from content/digest
    manifest.content-size           (store) the content's length differs from content/size-bytes
    manifest.content-over-limit     (store) the content is longer than bytes/max
    manifest.ref-digest             (store) a ref whose own text carries ``sha256:X`` has a
                                    digest other than ``sha256:X``
    manifest.ref-rebound            (store) an earlier accepted manifest, or an earlier item of
                                    the same one, bound the ref to another digest
    manifest.content-edge           (check) a stored manifest has no ``content`` edge to its
                                    rendered content (a CorruptionError)

The six (store) codes are :class:`ManifestBindingError` (a
:class:`~evstore.errors.BindingConflict`); the pure ones among them are computed here
(:func:`check_content`, :func:`check_ref_self_digest`), ``ref-rebound`` by
:class:`ManifestKind` from :func:`item_ref_digests`. ``manifest.content-edge`` is a
:class:`~evstore.errors.CorruptionError`. All others are :class:`ManifestError` (a
:class:`~evstore.errors.ContractError`). :data:`CODES` gives each a one-line meaning.

In the store (:class:`ManifestKind`, registered as kind ``manifest``): ingest runs
:func:`validate`, then binds the rendered content (stored, or supplied with the command and
matched by SHA-256), refs carrying their digest, and each item ``ref -> digest`` (binding
namespace ``manifest.item-ref``, first write wins), all in the command's one transaction. The
artifact has a ``content`` edge to the content blob and the lookup attribute ``manifest_ref``
(``evstore find --manifest-ref``). ``evstore validate`` records absent content as a warning
(upstream fixtures have no public content); ingest and ``check`` require it.

Decisions where the contract is silent:

* Detection (:func:`detect`): a manifest is a JSON object whose ``schema`` member is exactly
  ``"corpus-passage-evidence-manifest.v1"`` (upstream's own discriminator; the other orbidocs
  documents, the preparation request and the binding, carry other values).
* Exact refs. The refs checked for ``latest`` are the members named ``ref`` or ``*/ref`` outside
  ``phase``: ``manifest/ref``, ``inference-flow-binding/ref``, ``content/ref``,
  ``review/target`` ``proposal/ref``, and each item's ``ref`` and ``execution/ref``.
  Identifiers that are not refs (``query/id``, ``room/id``, ``reader`` ``id``, ``step/id``,
  ``source/instance``) and digests are not checked. The comparison is case-sensitive
  (``Latest`` is a different segment). ``phase`` is not walked: its shape is not public.
* Review target: only the candidate must be an item (the contract says so of the candidate
  only); the proposal need not be.
* Self-address and ref/digest agreement compare text: ``sha256:X`` must be spelled exactly as
  in the other member. :func:`check_ref_self_digest` covers each item (``ref`` against
  ``digest``) and ``content/ref`` against ``object-store:`` + ``content/digest``.
* Fault order (:func:`validate`): schema faults, then contract rules (Rule 1, revision-2 phase,
  item rules in the order listed above, exact refs, review target), then the self-address.
  Every fault is reported; ingest reports the first. The rules read the document defensively,
  so a schema fault elsewhere does not hide them. Write-time faults follow, in this order:
  content (missing/digest, size, limit), refs carrying their digest, ref rebinding.
* Content: found by the SHA-256 in content/digest, among the bytes supplied with the command
  and the stored blobs. When it is found nowhere and the command supplied exactly one byte
  string (not counting the manifest's own JSON, which a bundle supplies too), that byte string
  is what the user offered as the content: it is checked as the content, so its other SHA-256
  is ``content-digest`` (then its length: ``content-size``, ``content-over-limit``). With none,
  or several, supplied, the content is ``content-missing``. The count is per command: in a
  batch of manifests given one ``--content``, a manifest whose content is absent is told that
  this file is not its content. ``content-digest`` is also raised for a content/digest that is
  not the canonical base64url of any SHA-256 (non-zero padding bits), which no content can
  match. A declared content/size-bytes above bytes/max is ``content-over-limit`` even without
  content.
* Ref bindings: each item's ``ref -> digest`` (not ``execution/ref``, which has no digest of
  its own, nor ``review/target``'s proposal) in one store-wide namespace; a second item of the
  same manifest binding the same ref to another digest is ``ref-rebound`` too.
* ``evstore check`` judges a stored revision-2 manifest as accepted (it was, with a recorded
  warning), whatever the setting is now: turning the setting off does not make a store faulty.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from .artifacts import ArtifactResult, Warning_
from .canonical import dumps, loads
from .digests import b64u_to_hex, blake3_hex, hex_to_b64u, sha256_b64u, sha256_hex
from .errors import (
    BindingConflict,
    ContractError,
    CorruptionError,
    EvstoreError,
    JSONFormError,
    NotFound,
    join_pointer,
)

if TYPE_CHECKING:
    from .txn import Txn

__all__ = [
    "ARTIFACT_EXECUTION",
    "BINDING_CODES",
    "CODES",
    "CONTENT_DIGEST",
    "CONTENT_EDGE",
    "CONTENT_EDGE_MISSING",
    "CONTENT_MISSING",
    "CONTENT_OVER_LIMIT",
    "CONTENT_SIZE",
    "CONTRACT",
    "FIND_ATTR",
    "INCLUDED_REASON",
    "MANIFEST_REF_PREFIX",
    "ManifestBindingError",
    "ManifestError",
    "ManifestKind",
    "ManifestOps",
    "OMITTED_REASON",
    "PHASE_MISSING",
    "PHASE_UNVERIFIABLE",
    "REF_DIGEST",
    "REF_NAMESPACE",
    "REF_NOT_EXACT",
    "REF_REBOUND",
    "REQUIRED_EXCLUDED",
    "REVIEW_TARGET",
    "RULES",
    "RULE_1",
    "SCHEMA",
    "SCHEMA_FILE",
    "SCHEMA_NAME",
    "SELF_ADDRESS",
    "SETTING_ACCEPT_UNVERIFIED_PHASE",
    "check_content",
    "check_ref_self_digest",
    "compute_manifest_ref",
    "content_expectations",
    "detect",
    "item_ref_digests",
    "load_schema",
    "validate",
]

#: Contract file name, the prefix of every ``rule``.
CONTRACT = "orbidocs-corpus-passage-evidence-manifest-v1"
#: The ``schema`` member value that identifies a manifest.
SCHEMA_NAME = "corpus-passage-evidence-manifest.v1"
#: Our JSON Schema, a file of this package (``evstore/schemas/``).
SCHEMA_FILE = "orbidocs-manifest-v1.schema.json"
#: ``manifest/ref`` = this prefix + 43-char base64url SHA-256 of the JCS form without it.
MANIFEST_REF_PREFIX = "corpus-evidence-manifest:sha256:"
#: Store setting: accept revision-2 manifests whose phase cannot be verified, with a warning.
SETTING_ACCEPT_UNVERIFIED_PHASE = "manifests.accept_unverified_phase"

SCHEMA = "manifest.schema"
RULE_1 = "manifest.rule-1"
PHASE_MISSING = "manifest.phase-missing"
PHASE_UNVERIFIABLE = "manifest.phase-unverifiable"
REQUIRED_EXCLUDED = "manifest.item-required-excluded"
OMITTED_REASON = "manifest.item-omitted-reason"
INCLUDED_REASON = "manifest.item-included-reason"
ARTIFACT_EXECUTION = "manifest.item-artifact-execution"
REF_NOT_EXACT = "manifest.ref-not-exact"
REVIEW_TARGET = "manifest.review-target"
SELF_ADDRESS = "manifest.self-address"
CONTENT_MISSING = "manifest.content-missing"
CONTENT_DIGEST = "manifest.content-digest"
CONTENT_SIZE = "manifest.content-size"
CONTENT_OVER_LIMIT = "manifest.content-over-limit"
REF_DIGEST = "manifest.ref-digest"
REF_REBOUND = "manifest.ref-rebound"
CONTENT_EDGE_MISSING = "manifest.content-edge"

#: Code -> the contract rule it implements (``file#section``; README facts are cited by file).
RULES: dict[str, str] = {
    SCHEMA: f"{CONTRACT}#fields",
    RULE_1: f"{CONTRACT}#rule-1",
    PHASE_MISSING: f"{CONTRACT}#phase",
    PHASE_UNVERIFIABLE: f"{CONTRACT}#phase",
    REQUIRED_EXCLUDED: f"{CONTRACT}#items",
    OMITTED_REASON: f"{CONTRACT}#items",
    INCLUDED_REASON: f"{CONTRACT}#items",
    ARTIFACT_EXECUTION: f"{CONTRACT}#items",
    REF_NOT_EXACT: f"{CONTRACT}#items",
    REVIEW_TARGET: f"{CONTRACT}#review-target",
    SELF_ADDRESS: "contracts/README#corpus-passage-evidence-manifests-orbidocs",
    CONTENT_MISSING: f"{CONTRACT}#content-ref",
    CONTENT_DIGEST: f"{CONTRACT}#content-digest",
    CONTENT_SIZE: f"{CONTRACT}#content-size-bytes",
    CONTENT_OVER_LIMIT: f"{CONTRACT}#bytes-max",
    REF_DIGEST: f"{CONTRACT}#items",
    REF_REBOUND: f"{CONTRACT}#items",
    CONTENT_EDGE_MISSING: f"{CONTRACT}#content-ref",
}

#: Codes raised as :class:`ManifestBindingError` (write-time bindings).
BINDING_CODES = frozenset(
    {CONTENT_MISSING, CONTENT_DIGEST, CONTENT_SIZE, CONTENT_OVER_LIMIT, REF_DIGEST, REF_REBOUND}
)

# Our schema's rule subschemas ($defs names) -> code and message. A fault whose schema path
# passes through one of them is that rule's fault, not a shape fault.
_RULE_DEFS: dict[str, tuple[str, str]] = {
    "rule-1": (RULE_1, "projection revision 1 needs at least one item and no phase"),
    "rule-revision-2-phase": (PHASE_MISSING, "projection revision 2 needs a phase object"),
    "rule-item-required-excluded": (
        REQUIRED_EXCLUDED,
        "a required item is always included; this one has included: false",
    ),
    "rule-item-omitted-reason": (
        OMITTED_REASON,
        "an item left out (included: false) must name omitted/reason",
    ),
    "rule-item-included-reason": (
        INCLUDED_REASON,
        "an included item carries no omitted/reason",
    ),
    "rule-item-artifact-execution": (
        ARTIFACT_EXECUTION,
        "an artifact item must name the execution that produced it (execution/ref)",
    ),
}

# Order of contract-rule faults in validate()'s answer (schema faults come first, the
# self-address last).
_RULE_ORDER = (
    RULE_1,
    PHASE_MISSING,
    PHASE_UNVERIFIABLE,
    REQUIRED_EXCLUDED,
    OMITTED_REASON,
    INCLUDED_REASON,
    ARTIFACT_EXECUTION,
    REF_NOT_EXACT,
    REVIEW_TARGET,
)

_TOP_REFS = ("manifest/ref", "inference-flow-binding/ref", "content/ref")
_ITEM_REFS = ("ref", "execution/ref")


class ManifestError(ContractError):
    """An orbidocs manifest breaks its contract (codes ``manifest.*`` outside BINDING_CODES)."""

    default_code = SCHEMA


class ManifestBindingError(BindingConflict):
    """A manifest's write-time binding fails (codes in :data:`BINDING_CODES`)."""

    default_code = CONTENT_DIGEST


def _error(code: str, message: str, pointer: str, **details: Any) -> ManifestError:
    return ManifestError(
        message, code=code, rule=RULES[code], pointer=pointer, details=details or None
    )


def _binding(code: str, message: str, pointer: str, **details: Any) -> ManifestBindingError:
    return ManifestBindingError(
        message, code=code, rule=RULES[code], pointer=pointer, details=details or None
    )


def detect(doc: Any) -> bool:
    """Whether ``doc`` is an orbidocs manifest: an object with ``schema`` exactly ``SCHEMA_NAME``.

    Args:
        doc: a parsed JSON value.

    Returns:
        True for ``{"schema": "corpus-passage-evidence-manifest.v1", ...}``, whatever else it
        holds (validation reports the rest); False for anything else.
    """
    return isinstance(doc, dict) and doc.get("schema") == SCHEMA_NAME


def load_schema() -> dict[str, Any]:
    """Our JSON Schema for the manifest, parsed (a fresh copy on each call).

    Returns:
        The schema document (JSON Schema 2020-12, ``$id``
        ``urn:evstore:schema:orbidocs:corpus-passage-evidence-manifest:v1``).
    """
    text = resources.files(__package__).joinpath("schemas", SCHEMA_FILE).read_text("utf-8")
    return json.loads(text)


def _refuse_retrieval(uri: str) -> Any:
    # Our schema is self-contained; any retrieval attempt is a bug in it, never a fetch.
    raise ValueError(f"evstore never retrieves schemas ({uri})")


@lru_cache(maxsize=1)
def _validator() -> jsonschema_rs.Draft202012Validator:
    return jsonschema_rs.Draft202012Validator(
        load_schema(), validate_formats=True, retriever=_refuse_retrieval
    )


def _rule_def(schema_path: list[str | int]) -> str | None:
    """The ``rule-*`` subschema a fault comes from, if any.

    jsonschema-rs reports the schema path after resolving ``$ref``s, so a fault in a referenced
    subschema has a path that starts at its ``$defs`` entry.
    """
    for i in range(len(schema_path) - 1):
        if schema_path[i] == "$defs" and schema_path[i + 1] in _RULE_DEFS:
            return str(schema_path[i + 1])
    return None


def _schema_faults(doc: Any) -> tuple[list[ManifestError], list[ManifestError]]:
    """Run our JSON Schema: (shape faults, rule faults), each in the validator's order."""
    shape: list[ManifestError] = []
    rules: list[ManifestError] = []
    validator = _validator()
    # is_valid stops early and builds no error objects: a quarter of iter_errors' time on a
    # valid 32-item manifest, and valid manifests are the common case.
    if validator.is_valid(doc):
        return shape, rules
    for fault in validator.iter_errors(doc):
        pointer = join_pointer("", *fault.instance_path)
        rule = _rule_def(fault.schema_path)
        if rule is not None:
            code, message = _RULE_DEFS[rule]
            rules.append(_error(code, message, pointer, schema_rule=rule))
            continue
        keyword = fault.kind.name
        schema_path = join_pointer("", *fault.schema_path)
        if isinstance(fault.kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
            # One fault per unexpected member, pointing at it: easier to act on than one
            # fault at the enclosing object.
            for name in fault.kind.unexpected:
                shape.append(
                    _error(
                        SCHEMA,
                        f"member {name!r} is not allowed here",
                        join_pointer(pointer, name),
                        keyword=keyword,
                        schema_path=schema_path,
                    )
                )
            continue
        shape.append(
            _error(SCHEMA, fault.message, pointer, keyword=keyword, schema_path=schema_path)
        )
    return shape, rules


def _setting_on(settings: Mapping[str, Any] | None, name: str) -> bool:
    # Settings are typed (evstore.settings declares this one bool): only True turns it on, so a
    # stray string such as "false" never does.
    return settings is not None and settings.get(name) is True


def _revision(doc: dict[str, Any]) -> Any:
    projection = doc.get("projection")
    return projection.get("revision") if isinstance(projection, dict) else None


def _is_revision(value: Any, n: int) -> bool:
    # JSON numbers compare by value (2.0 is 2), booleans are not numbers.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == n


def _items(doc: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    items = doc.get("items")
    if not isinstance(items, list):
        return []
    return [(i, item) for i, item in enumerate(items) if isinstance(item, dict)]


def _refs(doc: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every ref checked for exactness, as (pointer tokens, text); see the module docstring.

    Tokens, not pointers: a pointer is built only for a ref that fails.
    """
    for name in _TOP_REFS:
        value = doc.get(name)
        if isinstance(value, str):
            yield (name,), value
    target = doc.get("review/target")
    if isinstance(target, dict) and isinstance(target.get("proposal/ref"), str):
        yield ("review/target", "proposal/ref"), target["proposal/ref"]
    for i, item in _items(doc):
        for name in _ITEM_REFS:
            value = item.get(name)
            if isinstance(value, str):
                yield ("items", i, name), value


def _phase_faults(
    doc: dict[str, Any], settings: Mapping[str, Any] | None
) -> tuple[list[ManifestError], list[dict[str, Any]]]:
    if not (_is_revision(_revision(doc), 2) and isinstance(doc.get("phase"), dict)):
        return [], []
    fault = _error(
        PHASE_UNVERIFIABLE,
        "projection revision 2: the phase schema (corpus-task-pack-phase.v1) is not public, "
        "so its bases cannot be checked to be required, included and exact",
        "/phase",
    )
    if _setting_on(settings, SETTING_ACCEPT_UNVERIFIED_PHASE):
        warning = {
            "code": fault.code,
            "message": fault.message + f" (accepted: {SETTING_ACCEPT_UNVERIFIED_PHASE} is on)",
            "rule": fault.rule,
            "pointer": fault.pointer,
        }
        return [], [warning]
    return [fault], []


def _exact_ref_faults(doc: dict[str, Any]) -> list[ManifestError]:
    return [
        _error(
            REF_NOT_EXACT,
            f"{ref!r} is not exact: a segment is 'latest'; refs name one fixed object",
            join_pointer("", *tokens),
            ref=ref,
        )
        for tokens, ref in _refs(doc)
        # The substring test first: most refs never contain it, and split() allocates.
        if "latest" in ref and "latest" in ref.split(":")
    ]


def _review_target_faults(doc: dict[str, Any]) -> list[ManifestError]:
    target = doc.get("review/target")
    if not isinstance(target, dict) or not isinstance(target.get("candidate/digest"), str):
        return []
    digest = target["candidate/digest"]
    same_digest = [(i, item) for i, item in _items(doc) if item.get("digest") == digest]
    for _, item in same_digest:
        if (
            item.get("kind") == "candidate"
            and item.get("required") is True
            and item.get("included") is True
        ):
            return []
    if same_digest:
        seen = ", ".join(
            f"/items/{i} (kind {item.get('kind')!r}, required {item.get('required')!r}, "
            f"included {item.get('included')!r})"
            for i, item in same_digest
        )
        why = f"items with that digest are not required, included candidates: {seen}"
    else:
        why = "no item has that digest"
    return [
        _error(
            REVIEW_TARGET,
            "review/target candidate/digest must name a required, included item of kind "
            f"candidate; {why}",
            join_pointer("", "review/target", "candidate/digest"),
            candidate_digest=digest,
        )
    ]


def compute_manifest_ref(doc: Mapping[str, Any]) -> str:
    """The self-address a manifest must carry in ``manifest/ref``.

    ``"corpus-evidence-manifest:sha256:"`` + unpadded base64url of SHA-256 over the RFC 8785
    (JCS) bytes of ``doc`` without its ``manifest/ref`` member (contracts README, orbidocs).
    Every other member, unknown ones included, is covered.

    Args:
        doc: the manifest as a parsed JSON object; it is not modified.

    Returns:
        The ref, 75 characters (32-char prefix + 43).

    Raises:
        TypeError: ``doc`` is not a mapping, or holds non-JSON Python values.
        JSONFormError: ``json.int-range`` / ``json.non-finite`` for values no strict parse
            yields (an int beyond 2**53-1, NaN).
    """
    if not isinstance(doc, Mapping):
        raise TypeError("a manifest is a JSON object")
    return _manifest_ref(doc, parsed=False)


def _manifest_ref(doc: Mapping[str, Any], *, parsed: bool) -> str:
    body = {key: value for key, value in doc.items() if key != "manifest/ref"}
    canonical = dumps(body)  # the one canonical form (evstore.canonical), fast path included
    return MANIFEST_REF_PREFIX + sha256_b64u(canonical)


_MEMBER = b'"manifest/ref":'


def _body_from_canonical(canonical: bytes, claimed: str) -> bytes | None:
    """The RFC 8785 bytes of the manifest without ``manifest/ref``, cut from its whole form.

    ``canonical`` is the RFC 8785 form of a manifest whose top-level ``manifest/ref`` is the
    string ``claimed``. In RFC 8785 output every ``"`` inside a string is escaped, so the bytes
    ``"manifest/ref":`` right after ``{`` or ``,`` are a member name and nothing else; when
    there is exactly one such name, it is the top-level member, and removing it with its value
    and one adjoining comma gives exactly the form of the object without it (members stay in
    order). Returns None when the name occurs more than once (a nested member of that name:
    then the caller canonicalises the body instead).
    """
    member = _MEMBER + dumps(claimed)
    start = -1
    at = canonical.find(_MEMBER)
    while at != -1:
        if at > 0 and canonical[at - 1 : at] in (b"{", b","):
            if start != -1:
                return None
            start = at
        at = canonical.find(_MEMBER, at + 1)
    end = start + len(member)
    if start <= 0 or canonical[start:end] != member or canonical[end : end + 1] not in (b",", b"}"):
        return None
    if canonical[start - 1 : start] == b",":
        return canonical[: start - 1] + canonical[end:]
    if canonical[end : end + 1] == b",":
        return canonical[:start] + canonical[end + 1 :]
    return canonical[:start] + canonical[end:]


def _self_address_faults(
    doc: dict[str, Any], *, parsed: bool = False, canonical: bytes | None = None
) -> list[EvstoreError]:
    claimed = doc.get("manifest/ref")
    if not isinstance(claimed, str):
        return []  # absent or not a string: already a schema fault
    try:
        body = _body_from_canonical(canonical, claimed) if canonical is not None else None
        if body is not None:
            expected = MANIFEST_REF_PREFIX + sha256_b64u(body)
        else:
            expected = _manifest_ref(doc, parsed=parsed)
    except JSONFormError as exc:
        # No canonical form, so no address can be checked; say why instead.
        return [exc]
    if claimed == expected:
        return []
    return [
        _error(
            SELF_ADDRESS,
            f"manifest/ref is {claimed!r} but the manifest's address is {expected!r}",
            "/manifest~1ref",
            expected=expected,
            actual=claimed,
        )
    ]


def validate(
    doc: Any, settings: Mapping[str, Any] | None = None
) -> tuple[list[EvstoreError], list[dict[str, Any]]]:
    """Every contract fault of one manifest, and the warnings of an accepted one.

    Checks, in this order: our JSON Schema (shape faults, ``manifest.schema``); the contract
    rules (Rule 1, revision-2 phase, item rules, exact refs, review target); the self-address.
    Content binding and ref bindings are write-time checks (:func:`check_content`,
    :func:`check_ref_self_digest`, :func:`item_ref_digests`).

    Args:
        doc: the parsed manifest (from :func:`evstore.canonical.loads`).
        settings: store settings; reads ``manifests.accept_unverified_phase`` (bool, default
            False): when True a revision-2 phase is accepted with a warning instead of
            ``manifest.phase-unverifiable``.

    Returns:
        ``(errors, warnings)``: errors are :class:`ManifestError` (or a ``json.*``
        :class:`~evstore.errors.JSONFormError` when the document has no canonical form), empty
        when the manifest is valid; warnings are dicts ``{code, message, rule, pointer}``.

    Raises:
        TypeError: ``doc`` holds non-JSON Python values.
    """
    return _validate(doc, settings, parsed=False)


def _validate(
    doc: Any,
    settings: Mapping[str, Any] | None,
    *,
    parsed: bool,
    canonical: bytes | None = None,
) -> tuple[list[EvstoreError], list[dict[str, Any]]]:
    """:func:`validate`.

    ``parsed``: ``doc`` comes from the strict reader (see _manifest_ref). ``canonical``: its
    RFC 8785 bytes when the caller has them; the self-address is then cut from them instead of
    canonicalising the document again (see _body_from_canonical).
    """
    shape, rule_faults = _schema_faults(doc)
    warnings: list[dict[str, Any]] = []
    if not isinstance(doc, dict):
        return list(shape), warnings
    phase, warnings = _phase_faults(doc, settings)
    rule_faults += phase
    rule_faults += _exact_ref_faults(doc)
    rule_faults += _review_target_faults(doc)
    rule_faults.sort(key=lambda e: _RULE_ORDER.index(e.code))  # stable: keeps document order
    errors: list[EvstoreError] = [
        *shape,
        *rule_faults,
        *_self_address_faults(doc, parsed=parsed, canonical=canonical),
    ]
    return errors, warnings


def _digest_b64u(value: Any) -> str | None:
    if isinstance(value, str) and value.startswith("sha256:") and len(value) == 50:
        return value[len("sha256:") :]
    return None


def content_expectations(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What the rendered content must be, for the write-time content binding.

    Args:
        doc: a manifest that passed :func:`validate`.

    Returns:
        ``{"sha256": 64 lowercase hex (decoded from content/digest), "content_digest":
        "sha256:<43>", "content_ref": "object-store:sha256:<43>", "size": content/size-bytes
        in bytes, "bytes_max": bytes/max in bytes}``.

    Raises:
        ManifestError: ``manifest.schema`` where one of those members is absent or malformed
            (the manifest was not validated).
        ManifestBindingError: ``manifest.content-digest`` where content/digest is not the
            canonical base64url of any SHA-256 (non-zero padding bits): no content can match.
    """
    b64u = _digest_b64u(doc.get("content/digest"))
    if b64u is None:
        raise _error(SCHEMA, "content/digest is not sha256:<43 base64url>", "/content~1digest")
    for name in ("content/size-bytes", "bytes/max"):
        value = doc.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _error(SCHEMA, f"{name} is not an integer", join_pointer("", name))
    if not isinstance(doc.get("content/ref"), str):
        raise _error(SCHEMA, "content/ref is not a string", "/content~1ref")
    try:
        hex_digest = b64u_to_hex(b64u)
    except ValueError as exc:
        raise _binding(
            CONTENT_DIGEST,
            f"content/digest is not a SHA-256 in canonical base64url ({exc}); no content has it",
            "/content~1digest",
        ) from None
    return {
        "sha256": hex_digest,
        "content_digest": doc["content/digest"],
        "content_ref": doc["content/ref"],
        "size": doc["content/size-bytes"],
        "bytes_max": doc["bytes/max"],
    }


def check_content(
    doc: Mapping[str, Any], sha256_hex: str | None, size: int | None
) -> list[ManifestBindingError]:
    """Check the rendered content against the manifest (nothing is ever truncated).

    Args:
        doc: a manifest that passed :func:`validate`.
        sha256_hex: SHA-256 of the content (64 lowercase hex), or None when the content is
            neither stored nor supplied.
        size: length of the content in bytes (None with ``sha256_hex``).

    Returns:
        Faults in this order: ``manifest.content-missing`` or ``manifest.content-digest``,
        ``manifest.content-size`` (length differs from content/size-bytes),
        ``manifest.content-over-limit`` (length above bytes/max; without content, the declared
        content/size-bytes above bytes/max). Empty when the content binds.

    Raises:
        ManifestError, ManifestBindingError: as :func:`content_expectations`.
    """
    return _check_content(content_expectations(doc), sha256_hex, size)


def _check_content(
    expect: dict[str, Any], sha256_hex: str | None, size: int | None, *, supplied: bool = False
) -> list[ManifestBindingError]:
    """:func:`check_content` on :func:`content_expectations`' answer.

    ``supplied``: the bytes checked are not the content found by SHA-256 but the one byte
    string supplied with the command (see ManifestKind); the digest fault says so.
    """
    faults: list[ManifestBindingError] = []
    present = sha256_hex is not None and size is not None
    if not present:
        faults.append(
            _binding(
                CONTENT_MISSING,
                f"the rendered content {expect['content_ref']} is neither stored nor supplied "
                "with the command (supplied content is matched by SHA-256)",
                "/content~1ref",
            )
        )
        # What the manifest declares can still exceed its own limit.
        size = expect["size"]
    elif sha256_hex != expect["sha256"]:
        actual = "sha256:" + hex_to_b64u(sha256_hex)  # type: ignore[arg-type]
        what = (
            f"the only content supplied with the command ({size} bytes) is not this manifest's: "
            "its SHA-256 is"
            if supplied
            else "the content's SHA-256 is"
        )
        faults.append(
            _binding(
                CONTENT_DIGEST,
                f"{what} {actual}, content/digest says {expect['content_digest']}",
                "/content~1digest",
                actual=actual,
                expected=expect["content_digest"],
                **({"supplied": True} if supplied else {}),
            )
        )
    if present and size != expect["size"]:
        faults.append(
            _binding(
                CONTENT_SIZE,
                f"the content is {size} bytes, content/size-bytes says {expect['size']}",
                "/content~1size-bytes",
            )
        )
    if size > expect["bytes_max"]:
        faults.append(
            _binding(
                CONTENT_OVER_LIMIT,
                f"the content is {size} bytes, over bytes/max {expect['bytes_max']}; "
                "evidence is never truncated",
                "/bytes~1max",
            )
        )
    return faults


def _carried_digests(ref: str) -> list[str]:
    """``X`` for every ``sha256:X`` in the ref's ``:``-separated segments."""
    parts = ref.split(":")
    return [parts[i + 1] for i in range(len(parts) - 1) if parts[i] == "sha256"]


def check_ref_self_digest(doc: Mapping[str, Any]) -> list[ManifestBindingError]:
    """Refs whose own text carries ``sha256:X`` must have the digest ``sha256:X``.

    Covers each item (``ref`` against ``digest``, pointer at the digest) and the content
    (``content/ref`` must be ``object-store:`` + ``content/digest``, pointer at the ref).
    Texts are compared exactly. Members of the wrong type are skipped (schema faults).

    Args:
        doc: the parsed manifest.

    Returns:
        ``manifest.ref-digest`` faults in document order; empty when all agree.
    """
    faults: list[ManifestBindingError] = []
    items = doc.get("items")
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        ref, digest = item.get("ref"), item.get("digest")
        if not (isinstance(ref, str) and isinstance(digest, str)):
            continue
        for carried in _carried_digests(ref):
            if digest != "sha256:" + carried:
                faults.append(
                    _binding(
                        REF_DIGEST,
                        f"ref {ref!r} carries sha256:{carried} but its digest is {digest!r}",
                        join_pointer("/items", i, "digest"),
                        ref=ref,
                        digest=digest,
                    )
                )
                break
    content_ref, content_digest = doc.get("content/ref"), doc.get("content/digest")
    if isinstance(content_ref, str) and isinstance(content_digest, str):
        if content_ref != "object-store:" + content_digest:
            faults.append(
                _binding(
                    REF_DIGEST,
                    f"content/ref is {content_ref!r}, not 'object-store:' + content/digest "
                    f"({content_digest!r})",
                    "/content~1ref",
                    ref=content_ref,
                    digest=content_digest,
                )
            )
    return faults


def item_ref_digests(doc: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The (ref -> digest) bindings a manifest asserts, for the write-time rebinding check.

    Args:
        doc: a manifest that passed :func:`validate`.

    Returns:
        ``[(pointer, ref, digest), ...]`` for each item in order, the pointer at the item's
        digest (``/items/3/digest``), which is what a ``manifest.ref-rebound`` fault names. A
        ref may appear more than once; the store must treat an earlier item of the same
        manifest like an earlier manifest.
    """
    return [(f"/items/{i}/digest", ref, digest) for i, ref, digest in _item_pairs(doc)]


def _item_pairs(doc: Mapping[str, Any]) -> list[tuple[int, str, str]]:
    """``(item index, ref, digest)`` for each item with both as strings, in order."""
    items = doc.get("items")
    out: list[tuple[int, str, str]] = []
    for i, item in enumerate(items if isinstance(items, list) else ()):
        if isinstance(item, dict):
            ref, digest = item.get("ref"), item.get("digest")
            if isinstance(ref, str) and isinstance(digest, str):
                out.append((i, ref, digest))
    return out


#: Code -> one-line meaning (docs/errors.md is generated from every module's CODES).
CODES: dict[str, str] = {
    SCHEMA: "the manifest breaks evstore's JSON Schema for orbidocs v1 (shape, pattern, bound, "
    "enum, missing or unexpected member)",
    RULE_1: "projection revision 1 with no item or with a phase (contract Rule 1)",
    PHASE_MISSING: "projection revision 2 without a phase object",
    PHASE_UNVERIFIABLE: "projection revision 2: the phase schema is not public, so the phase "
    "cannot be verified (a warning when manifests.accept_unverified_phase is on)",
    REQUIRED_EXCLUDED: "a required item is not included",
    OMITTED_REASON: "an item left out (included: false) names no omitted/reason",
    INCLUDED_REASON: "an included item carries omitted/reason",
    ARTIFACT_EXECUTION: "an artifact item names no execution/ref",
    REF_NOT_EXACT: "a ref has a ':'-separated segment 'latest'",
    REVIEW_TARGET: "review/target's candidate/digest names no required, included candidate item",
    SELF_ADDRESS: "manifest/ref differs from the SHA-256 of the manifest's RFC 8785 form "
    "without it",
    CONTENT_MISSING: "the rendered content is neither stored nor supplied with the command",
    CONTENT_DIGEST: "the rendered content's SHA-256 is not content/digest (or content/digest is "
    "not a canonical SHA-256)",
    CONTENT_SIZE: "the rendered content's length in bytes is not content/size-bytes",
    CONTENT_OVER_LIMIT: "the rendered content is longer than bytes/max (never truncated)",
    REF_DIGEST: "a ref whose text carries sha256:X has a digest other than sha256:X",
    REF_REBOUND: "the ref is already bound to another digest (an earlier manifest or item)",
    CONTENT_EDGE_MISSING: "(check) a stored manifest has no content edge to its rendered content",
}

# ----------------------------------------------------------------------------------------
# Store integration: the ``manifest`` kind handler and ``store.manifests`` operations.
# ----------------------------------------------------------------------------------------

#: Binding namespace: an item ref -> the digest first accepted for it.
REF_NAMESPACE = "manifest.item-ref"
#: Edge role from a manifest to its rendered content blob.
CONTENT_EDGE = "content"
#: Lookup attribute for ``evstore find --manifest-ref``.
FIND_ATTR = "manifest_ref"


def _rebound(pairs: list[tuple[int, str, str]]) -> Callable[[int, str], ManifestBindingError]:
    """The ``on_conflict`` of :meth:`Txn.bind_many` for ``pairs`` from :func:`_item_pairs`."""

    def conflict(index: int, existing: str) -> ManifestBindingError:
        i, ref, digest = pairs[index]
        return _binding(
            REF_REBOUND,
            f"ref {ref!r} is bound to {existing!r} by an earlier accepted manifest (or an "
            f"earlier item of this one); this manifest says {digest!r}",
            f"/items/{i}/digest",
            ref=ref,
            digest=digest,
            bound=existing,
        )

    return conflict


def _bind_item_refs(doc: Any, txn: Txn, origin: str = "") -> None:
    """One ``ref -> digest`` binding per item, in item order, in one batch.

    :meth:`Txn.bind_many` reports conflicts in pair order (a ref repeated in the manifest with
    another digest conflicts with its first occurrence), so the faults are those, in the order,
    of one :meth:`Txn.bind` per item.
    """
    pairs = _item_pairs(doc)
    if pairs:
        txn.bind_many(
            REF_NAMESPACE, [(ref, digest) for _, ref, digest in pairs], _rebound(pairs), origin
        )


def _is_this_document(data: bytes, doc: Any) -> bool:
    """Whether supplied bytes are the manifest's own JSON (a bundle supplies every file)."""
    if data[:4096].lstrip()[:1] != b"{":  # a slice: supplied files can be large
        return False
    try:
        return loads(data) == doc
    except EvstoreError:
        return False


def _sole_supplied(txn: Txn, doc: Any) -> tuple[str, bytes] | None:
    """The one byte string supplied with the command, other than the manifest itself, if one.

    None when none or several were supplied: then no bytes can be taken for the content.
    Reading supplied bytes counts as using them (``Txn.unused_supplied``), so with three or
    more supplied (at least two besides the manifest) none is read; this runs only when the
    content was not found, and a content fault follows.
    """
    shas = txn.supplied_sha256s()
    if len(shas) > 2:
        return None
    found: tuple[str, bytes] | None = None
    for sha in shas:
        data = txn.supplied_bytes(sha)
        if data is None or _is_this_document(data, doc):
            continue
        if found is not None:
            return None
        found = (sha, data)
    return found


class ManifestKind:
    """Kind ``manifest``: an orbidocs corpus passage evidence manifest, v1.

    Check: :func:`validate` (schema, contract rules, self-address) with the store settings.
    Write, in this order: rendered content (stored, or supplied with the command and matched by
    SHA-256; its size and bytes/max), refs whose text carries their digest, then one binding
    per item ``ref -> digest`` (namespace ``manifest.item-ref``, first write wins, all items in
    one :meth:`~evstore.txn.Txn.bind_many`). The artifact gets an edge ``content`` to the
    content blob and the lookup attribute ``manifest_ref``.

    Content that is neither stored nor supplied under its SHA-256 is ``manifest.content-missing``,
    unless the command supplied exactly one byte string (not counting the manifest's own JSON,
    which a bundle supplies too): that byte string is then what the user offered as the content,
    and it is checked as the content, so its wrong SHA-256 is ``manifest.content-digest`` (then
    its size and the limit, as for any content).

    In validate mode (``evstore validate``) absent content cannot be checked: it is recorded as
    a ``manifest.content-missing`` warning instead of a fault, so upstream fixtures, whose
    content is not public, validate. Ingest and audit require the content.
    """

    name = "manifest"
    contract_version = "v1"

    def detect(self, doc: Any) -> bool:
        """See :func:`detect`."""
        return detect(doc)

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> list[EvstoreError]:
        """Every fault of ``doc`` before bindings (:func:`validate` with ``txn.settings``).

        ``doc`` comes from the strict reader (the store parses every document with
        :func:`evstore.canonical.loads`), so its canonical form skips the domain re-check.

        Args:
            doc: the parsed manifest.
            txn: the transaction (settings).
            canonical: the RFC 8785 bytes of ``doc``, when the caller has them (the store has
                computed them before ``check``): the self-address is then checked on them
                without canonicalising the manifest a second time (the core passes them to
                handlers whose ``accepts_canonical`` is true).
        """
        return _validate(doc, txn.settings, parsed=True, canonical=canonical)[0]

    def _write_content(self, doc: Any, txn: Txn) -> tuple[str | None, list[ManifestBindingError]]:
        """Store or find the content: (its blob address hex or None, content faults)."""
        try:
            expect = content_expectations(doc)
        except (ManifestError, ManifestBindingError) as err:
            return None, [err]  # type: ignore[list-item]
        sha = expect["sha256"]
        data = txn.supplied_bytes(sha)
        if data is not None:
            # Supplied: put it (one lookup by address, one insert) rather than look it up by
            # SHA-256 first; a stored copy is found by the put all the same.
            put = txn.put_blob(data)
            return put.digest.blake3, _check_content(expect, sha, put.digest.size)
        row = txn.blob_by_sha256(sha)
        if row is not None:
            return row.digest.blake3, _check_content(expect, row.digest.sha256, row.digest.size)
        sole = _sole_supplied(txn, doc)
        if sole is not None:
            other_sha, other = sole
            return None, _check_content(expect, other_sha, len(other), supplied=True)
        return None, _check_content(expect, None, None)

    def _stored_content(self, doc: Any, txn: Txn) -> tuple[Any, list[ManifestBindingError]]:
        """(content blob row or None, content faults), the bytes re-read and re-hashed."""
        try:
            expect = content_expectations(doc)
        except (ManifestError, ManifestBindingError) as err:
            return None, [err]  # type: ignore[list-item]
        row = txn.blob_by_sha256(expect["sha256"])
        if row is None:
            return None, _check_content(expect, None, None)
        data = txn.read_blob(row)  # CorruptionError propagates: the bytes are not served
        return row, _check_content(expect, sha256_hex(data), len(data))

    #: ``check`` takes the store's canonical bytes (``canonical=``) to skip a second pass.
    accepts_canonical = True

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Bind content and item refs, then store the manifest (see the class docstring).

        Raises:
            ManifestBindingError: in ingest mode, the first binding fault (the transaction
                rolls back); collected through ``txn.fault`` in validate mode.
        """
        return self.flush([self.stage(doc, canonical, txn, {})], txn)[0]

    def flush(self, specs: list[Any], txn: Txn) -> list[ArtifactResult]:
        """Write staged manifests (row, ``content`` edge, attribute, warnings) with one
        statement per table; results in order.
        """
        return txn.put_artifacts(self.name, self.contract_version, specs)

    def stage(self, doc: Any, canonical: bytes, txn: Txn, batch: dict[str, Any]) -> tuple[Any, ...]:
        """One manifest's write-time work (content, ref digests, item bindings, in that
        order; faults through ``txn.fault``) and its row spec for :meth:`flush`.
        """
        notes: list[Warning_] = []
        content, faults = self._write_content(doc, txn)
        for fault in faults:
            if fault.code == CONTENT_MISSING and txn.mode == "validate":
                notes.append(Warning_(fault.code, fault.message + "; not checked", fault.pointer))
            else:
                txn.fault(fault)
        for fault in check_ref_self_digest(doc):
            txn.fault(fault)
        _bind_item_refs(doc, txn, origin=blake3_hex(canonical))
        _, phase_notes = _phase_faults(doc, txn.settings)
        notes = [Warning_(w["code"], w["message"], w["pointer"]) for w in phase_notes] + notes
        edges = [(CONTENT_EDGE, content)] if content is not None else []
        ref = doc.get("manifest/ref")
        attrs = [(FIND_ATTR, ref)] if isinstance(ref, str) else []
        return (canonical, edges, attrs, notes)

    def audit(self, doc: Any, address: str, txn: Txn) -> list[EvstoreError]:
        """Re-verify a stored manifest for ``evstore check``.

        Schema, contract rules and self-address as at ingest, except that a revision-2 phase is
        not a fault (the manifest was accepted with a recorded warning); then the content
        (present, bytes re-read and re-hashed, size, limit), refs carrying their digest, and
        the item ref bindings (compared, never written) and the ``content`` edge.

        Returns:
            The faults found; binding conflicts arrive through ``txn.faults``.
        """
        settings = {**txn.settings, SETTING_ACCEPT_UNVERIFIED_PHASE: True}
        faults: list[EvstoreError] = list(_validate(doc, settings, parsed=True)[0])
        if not detect(doc) or faults:
            return faults
        row, content_faults = self._stored_content(doc, txn)
        faults += content_faults
        faults += check_ref_self_digest(doc)
        _bind_item_refs(doc, txn)
        if row is not None and (CONTENT_EDGE, row.digest.blake3) not in txn.edges_from(address):
            faults.append(
                CorruptionError(
                    "the stored manifest has no content edge to its rendered content",
                    code=CONTENT_EDGE_MISSING,
                    rule=RULES[CONTENT_EDGE_MISSING],
                    pointer="/content~1ref",
                    details={"content": "blake3:" + row.digest.blake3},
                )
            )
        return faults


class ManifestOps:
    """``store.manifests``: orbidocs manifest operations on one :class:`~evstore.Store`."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def ingest(
        self, manifest: bytes, content: bytes | None = None, *, name: str = "-"
    ) -> ArtifactResult:
        """Ingest one manifest with (optionally) its rendered content, in one transaction.

        Args:
            manifest: the manifest's JSON bytes.
            content: the rendered content bytes, unless already stored.
            name: shown in errors as the input's path.

        Returns:
            The stored manifest's :class:`~evstore.artifacts.ArtifactResult`.

        Raises:
            JSONFormError, ManifestError, ManifestBindingError: the first fault; nothing is
                written.
        """
        from .api import Document

        supplied = [content] if content is not None else []
        report = self.store.ingest(
            [Document(manifest, name=name, kind="manifest")], supplied=supplied
        )
        return report.results[0]

    def validate(self, manifest: bytes, content: bytes | None = None, *, name: str = "-") -> Any:
        """Every fault of one manifest against the store as it is; writes nothing.

        Returns:
            The :class:`~evstore.api.IngestReport` (``faults``, and ``results`` with warnings).
        """
        from .api import Document

        supplied = [content] if content is not None else []
        return self.store.validate(
            [Document(manifest, name=name, kind="manifest")], supplied=supplied
        )

    def find(self, manifest_ref: str) -> list[Any]:
        """Stored manifests with this ``manifest/ref``, as ArtifactInfo, oldest first."""
        return self.store.find(FIND_ATTR, manifest_ref, kind=ManifestKind.name)

    def load(self, manifest_ref: str) -> dict[str, Any]:
        """The stored manifest with this ``manifest/ref``, parsed.

        Raises:
            NotFound: ``not-found.artifact`` when no manifest has that ref.
        """
        found = self.find(manifest_ref)
        if not found:
            raise NotFound(
                f"no manifest with manifest/ref {manifest_ref!r}",
                code="not-found.artifact",
                details={"manifest_ref": manifest_ref},
            )
        return self.store.load(found[0].address)

    def content(self, manifest_ref: str) -> bytes:
        """The rendered content of the stored manifest with this ``manifest/ref``, verified.

        Raises:
            NotFound: ``not-found.artifact`` (no such manifest) or ``not-found.blob``.
            CorruptionError: the stored bytes do not match their address.
        """
        return self.store.get(self.load(manifest_ref)["content/ref"])

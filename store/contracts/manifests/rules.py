"""Corpus passage evidence manifests, orbidocs v1: the pure rules (no database).

Implements ``../shared/contracts/orbidocs-corpus-passage-evidence-manifest-v1.md`` and the facts
in ``../shared/contracts/README.md``. A manifest lists the evidence one Agent passage reads
(items by exact ref and digest), the limit it was rendered under (``bytes/max``) and the
rendered content by address (``content/ref``, ``content/digest``, ``content/size-bytes``). Its
own address ``manifest/ref`` is the SHA-256 of its RFC 8785 form without that member.

This module owns every store-free rule: :func:`detect`, :func:`validate` (schema, contract
rules, self-address, as :class:`~evstore.core.errors.Faults`), the address
(:func:`compute_manifest_ref`, :func:`manifest_address`) and the pure parts of the write-time
bindings (:func:`content_expectations`, :func:`check_content`, :func:`check_ref_self_digest`,
:func:`item_ref_digests`). store/contracts/manifests/store.py binds them inside the transaction.

The shape is checked against evstore's own JSON Schema, ``schemas/orbidocs-manifest-v1.schema.json``
(2020-12, self-contained, formats asserted, never fetched from a network). On projection
revision 1 without ``phase`` it accepts exactly what at least one of the two published upstream
schema revisions accepts (tests/contracts/test_manifests_schema_diff.py). It also states the
contract text's newer projection revision 2. Subschemas named ``rule-*`` carry one contract rule
each; a fault under one of them gets that rule's code instead of ``manifest.schema``.

Codes (family, default rule and meaning: the rows ``manifest.*`` of
:data:`evstore.core.errors.CODES`; docs/errors.md)::

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

The six (store) codes are :class:`~evstore.core.errors.ManifestBindingError` (family ``binding``);
the pure ones among them are computed here, ``ref-rebound`` by store/contracts/manifests/store.py
from
:func:`item_ref_digests`. ``manifest.content-edge`` is a
:class:`~evstore.core.errors.CorruptionError`. All others are
:class:`~evstore.core.errors.ManifestError` (family ``contract``). Every error is built by
:func:`evstore.core.errors.error`.

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
* ``content-digest`` is also raised for a content/digest that is not the canonical base64url
  of any SHA-256 (non-zero padding bits), which no content can match. A declared
  content/size-bytes above bytes/max is ``content-over-limit`` even without content.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import jsonschema_rs

from ...core.canonical import dumps, loads
from ...core.digests import b64u_to_hex, hex_to_b64u, sha256_b64u
from ...core.errors import EvstoreError, Faults, JSONFormError, error, join_pointer
from ...core.json_schema import compile_schema, read_schema, schema_faults, truncated_fault
from ...core.near import near_member, spelling
from ...core.settings import setting

__all__ = [
    "ARTIFACT_EXECUTION",
    "CONTENT_DIGEST",
    "CONTENT_EDGE_MISSING",
    "CONTENT_MISSING",
    "CONTENT_OVER_LIMIT",
    "CONTENT_SIZE",
    "CONTRACT",
    "CONTRACT_VERSION",
    "FIND_ATTR",
    "INCLUDED_REASON",
    "KIND",
    "MANIFEST_REF_PREFIX",
    "OMITTED_REASON",
    "PHASE_MISSING",
    "PHASE_UNVERIFIABLE",
    "REF_DIGEST",
    "REF_NOT_EXACT",
    "REF_REBOUND",
    "REQUIRED_EXCLUDED",
    "REVIEW_TARGET",
    "RULE_1",
    "SCHEMA",
    "SCHEMA_FILE",
    "SCHEMA_NAME",
    "SELF_ADDRESS",
    "SETTING_ACCEPT_UNVERIFIED_PHASE",
    "check_content",
    "check_expected_content",
    "check_ref_self_digest",
    "compute_manifest_ref",
    "content_expectations",
    "detect",
    "item_ref_digests",
    "load_schema",
    "manifest_address",
    "phase_faults",
    "validate",
    "validate_canonical",
]

#: Contract file name, the prefix of every contract ``rule``.
CONTRACT = "orbidocs-corpus-passage-evidence-manifest-v1"
#: The contract version stored with every manifest artifact.
CONTRACT_VERSION = "v1"
#: The artifact kind this contract claims (store/objects/kinds.py registers ``ManifestKind`` for
# it).
KIND = "manifest"
#: Lookup attribute for ``evstore find --manifest-ref``.
FIND_ATTR = "manifest_ref"
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


def detect(doc: Any) -> str | None:
    """The kind this contract claims for ``doc``: ``"manifest"`` or None.

    Args:
        doc: a parsed JSON value.

    Returns:
        ``"manifest"`` for ``{"schema": "corpus-passage-evidence-manifest.v1", ...}`` whatever
        else it holds (validation reports the rest), and for a near miss (docs/kinds.md): a
        member near ``schema`` whose value is near ``corpus-passage-evidence-manifest`` plus
        anything (``.v2``), then rejected with ``manifest.schema``. None for anything else.
    """
    if not isinstance(doc, dict):
        return None
    found = near_member(doc, "schema")
    value = found[1] if found is not None else None
    near = isinstance(value, str) and spelling(value).startswith(_NEAR)
    return KIND if value == SCHEMA_NAME or near else None


_NEAR = spelling(SCHEMA_NAME.rsplit(".", 1)[0])


def load_schema() -> dict[str, Any]:
    """Our JSON Schema for the manifest, parsed (a fresh copy on each call).

    Returns:
        The schema document (JSON Schema 2020-12, ``$id``
        ``urn:evstore:schema:orbidocs:corpus-passage-evidence-manifest:v1``).
    """
    return read_schema(SCHEMA_FILE)


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return load_schema()  # one copy, read only


@lru_cache(maxsize=1)
def _validator() -> jsonschema_rs.Draft202012Validator:
    return compile_schema(_schema(), formats=True)


def _schema_faults(doc: Any) -> tuple[list[EvstoreError], list[EvstoreError]]:
    """Run our JSON Schema: (shape faults, rule faults), each in the validator's order.

    A fault whose schema path passes through a ``rule-*`` subschema is that rule's fault
    (jsonschema-rs reports paths after resolving ``$ref``s, so a fault in a referenced
    subschema starts at its ``$defs`` entry); the rest are ``manifest.schema``. At most
    :data:`~evstore.core.json_schema.MAX_SCHEMA_FAULTS` in all, then one ``manifest.schema``
    fault at ``""`` with ``details.truncated`` closes the shape faults.
    """
    shape: list[EvstoreError] = []
    rules: list[EvstoreError] = []
    found = schema_faults(_validator(), doc, schema=_schema(), formats=True)
    for fault in found.faults:
        rule = fault.rule(_RULE_DEFS)
        if rule is not None:
            code, message = _RULE_DEFS[rule]
            rules.append(error(code, message, join_pointer("", *fault.path), schema_rule=rule))
            continue
        if fault.member is not None:
            # One fault per unexpected member, pointing at it: easier to act on than one
            # fault at the enclosing object.
            message = f"member {fault.member!r} is not allowed here"
        else:
            message = fault.message
        shape.append(
            error(
                SCHEMA,
                message,
                fault.pointer,
                keyword=fault.keyword,
                schema_path=fault.schema_pointer,
            )
        )
    if found.truncated:
        shape.append(truncated_fault(SCHEMA))
    return shape, rules


def _revision(doc: dict[str, Any]) -> Any:
    projection = doc.get("projection")
    return projection.get("revision") if isinstance(projection, dict) else None


def _is_revision(value: Any, n: int) -> bool:
    # JSON numbers compare by value (2.0 is 2), booleans are not numbers.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == n


def _items(doc: Mapping[str, Any]) -> list[tuple[int, dict[str, Any]]]:
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


def phase_faults(doc: Any, settings: Mapping[str, Any] | None = None) -> Faults:
    """The revision-2 phase verdict (contract "phase"; the phase schema is not public).

    Args:
        doc: a parsed manifest.
        settings: store settings (None: defaults); reads ``manifests.accept_unverified_phase``
            through :func:`evstore.core.settings.setting`. Only the bool True turns it on, so a
            stray string such as ``"false"`` never does.

    Returns:
        Empty unless ``doc`` is projection revision 2 with a phase object; then one
        ``manifest.phase-unverifiable`` at ``/phase``: an error, or a warning (its message
        says it was accepted) when the setting is on.
    """
    if not (isinstance(doc, dict) and _is_revision(_revision(doc), 2)):
        return Faults()
    if not isinstance(doc.get("phase"), dict):
        return Faults()
    message = (
        "projection revision 2: the phase schema (corpus-task-pack-phase.v1) is not public, "
        "so its bases cannot be checked to be required, included and exact"
    )
    faults = Faults()
    if setting(settings, SETTING_ACCEPT_UNVERIFIED_PHASE) is True:
        accepted = f" (accepted: {SETTING_ACCEPT_UNVERIFIED_PHASE} is on)"
        faults.warn(PHASE_UNVERIFIABLE, message + accepted, "/phase")
    else:
        faults.add(PHASE_UNVERIFIABLE, message, "/phase")
    return faults


def _exact_ref_faults(doc: dict[str, Any]) -> list[EvstoreError]:
    return [
        error(
            REF_NOT_EXACT,
            f"{ref!r} is not exact: a segment is 'latest'; refs name one fixed object",
            join_pointer("", *tokens),
            ref=ref,
        )
        for tokens, ref in _refs(doc)
        # The substring test first: most refs never contain it, and split() allocates.
        if "latest" in ref and "latest" in ref.split(":")
    ]


def _review_target_faults(doc: dict[str, Any]) -> list[EvstoreError]:
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
        error(
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
    return _manifest_ref(doc)


def _manifest_ref(doc: Mapping[str, Any]) -> str:
    body = {key: value for key, value in doc.items() if key != "manifest/ref"}
    canonical = dumps(body)  # the one canonical form (evstore.core.canonical), fast path included
    return MANIFEST_REF_PREFIX + sha256_b64u(canonical)


def manifest_address(data: bytes, *, path: str | None = None) -> dict[str, Any]:
    """Compute the address of the manifest in ``data`` and compare it with its own claim.

    What ``evstore manifest address FILE`` prints; no store is needed.

    Args:
        data: the manifest's JSON bytes (read by the strict reader).
        path: the input's name, recorded on the ``input.invalid`` error.

    Returns:
        ``{"computed": manifest ref, "claimed": manifest/ref or None, "matches": bool}``;
        ``matches`` is True when the claim equals the computed ref or there is no claim.

    Raises:
        JSONFormError: ``json.*`` (the strict reader refused the bytes).
        InputError: ``input.invalid`` when the JSON is not an object.
    """
    doc = loads(data)
    if not isinstance(doc, dict):
        raise error("input.invalid", "a manifest is a JSON object", path=path)
    computed = compute_manifest_ref(doc)
    claimed = doc.get("manifest/ref")
    matches = claimed is None or claimed == computed
    return {"computed": computed, "claimed": claimed, "matches": matches}


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


def _self_address_faults(doc: dict[str, Any], canonical: bytes | None) -> list[EvstoreError]:
    claimed = doc.get("manifest/ref")
    if not isinstance(claimed, str):
        return []  # absent or not a string: already a schema fault
    try:
        body = _body_from_canonical(canonical, claimed) if canonical is not None else None
        if body is not None:
            expected = MANIFEST_REF_PREFIX + sha256_b64u(body)
        else:
            expected = _manifest_ref(doc)
    except JSONFormError as exc:
        # No canonical form, so no address can be checked; say why instead.
        return [exc]
    if claimed == expected:
        return []
    return [
        error(
            SELF_ADDRESS,
            f"manifest/ref is {claimed!r} but the manifest's address is {expected!r}",
            "/manifest~1ref",
            expected=expected,
            actual=claimed,
        )
    ]


def validate(
    doc: Any, settings: Mapping[str, Any] | None = None, *, kind: str | None = None
) -> Faults:
    """Every store-free fault of one manifest, and the warnings of an accepted one.

    Checks, in this order: our JSON Schema (shape faults, ``manifest.schema``); the contract
    rules (Rule 1, revision-2 phase, item rules, exact refs, review target); the self-address.
    Content binding and ref bindings are write-time checks (:func:`check_content`,
    :func:`check_ref_self_digest`, :func:`item_ref_digests`).

    Args:
        doc: the parsed manifest (from :func:`evstore.core.canonical.loads`).
        settings: store settings (None: every default); reads
            ``manifests.accept_unverified_phase`` (bool, default False): when True a
            revision-2 phase is accepted with a warning instead of ``manifest.phase-unverifiable``.
        kind: the kind to validate as; this contract has one, ``"manifest"`` (None means it).

    Returns:
        :class:`~evstore.core.errors.Faults`: ``errors`` are
        :class:`~evstore.core.errors.ManifestError` (or a ``json.*``
        :class:`~evstore.core.errors.JSONFormError` when the document has no canonical form), empty
        when the manifest is valid; ``warnings`` hold the accepted revision-2 phase
        (``manifest.phase-unverifiable``).

    Raises:
        ValueError: ``kind`` is another kind than ``"manifest"`` (API misuse).
        TypeError: ``doc`` holds non-JSON Python values.
    """
    if kind not in (None, KIND):
        raise ValueError(f"the orbidocs manifest contract has no kind {kind!r}")
    return _validate(doc, settings, None)


def validate_canonical(
    doc: Any, canonical: bytes, settings: Mapping[str, Any] | None = None
) -> Faults:
    """:func:`validate` for a document whose RFC 8785 bytes the caller already has.

    The store computes them before its check; the self-address is then cut from them
    (``manifest/ref`` removed in place) instead of canonicalising the manifest a second time.
    Same faults, in the same order, as :func:`validate`.

    Args:
        doc: the parsed manifest.
        canonical: ``doc``'s RFC 8785 bytes.
        settings: as for :func:`validate`.
    """
    return _validate(doc, settings, canonical)


def _validate(doc: Any, settings: Mapping[str, Any] | None, canonical: bytes | None) -> Faults:
    shape, rule_faults = _schema_faults(doc)
    if not isinstance(doc, dict):
        return Faults(errors=shape)
    phase = phase_faults(doc, settings)
    rule_faults += phase.errors
    rule_faults += _exact_ref_faults(doc)
    rule_faults += _review_target_faults(doc)
    rule_faults.sort(key=lambda e: _RULE_ORDER.index(e.code))  # stable: keeps document order
    errors = [*shape, *rule_faults, *_self_address_faults(doc, canonical)]
    return Faults(errors=errors, warnings=phase.warnings)


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
        raise error(SCHEMA, "content/digest is not sha256:<43 base64url>", "/content~1digest")
    for name in ("content/size-bytes", "bytes/max"):
        value = doc.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise error(SCHEMA, f"{name} is not an integer", join_pointer("", name))
    if not isinstance(doc.get("content/ref"), str):
        raise error(SCHEMA, "content/ref is not a string", "/content~1ref")
    try:
        hex_digest = b64u_to_hex(b64u)
    except ValueError as exc:
        raise error(
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


def check_content(doc: Mapping[str, Any], sha256_hex: str | None, size: int | None) -> Faults:
    """Check the rendered content against the manifest (nothing is ever truncated).

    Args:
        doc: a manifest that passed :func:`validate`.
        sha256_hex: SHA-256 of the content (64 lowercase hex), or None when the content is
            neither stored nor supplied.
        size: length of the content in bytes (None with ``sha256_hex``).

    Returns:
        Faults whose errors are, in this order: ``manifest.content-missing`` or
        ``manifest.content-digest``, ``manifest.content-size`` (length differs from
        content/size-bytes), ``manifest.content-over-limit`` (length above bytes/max; without
        content, the declared content/size-bytes above bytes/max). Empty when the content
        binds.

    Raises:
        ManifestError, ManifestBindingError: as :func:`content_expectations`.
    """
    return check_expected_content(content_expectations(doc), sha256_hex, size)


def check_expected_content(
    expect: Mapping[str, Any], sha256_hex: str | None, size: int | None, *, supplied: bool = False
) -> Faults:
    """:func:`check_content` on :func:`content_expectations`' answer (computed once).

    Args:
        expect: what :func:`content_expectations` returned.
        sha256_hex: SHA-256 of the bytes checked (64 lowercase hex), or None: no content.
        size: their length in bytes (None with ``sha256_hex``).
        supplied: the bytes checked are not the content found by SHA-256 but the one byte
            string supplied with the command (store/contracts/manifests/store.py); the digest fault
            says so.

    Returns:
        The faults of :func:`check_content`, in its order.
    """
    faults = Faults()
    if sha256_hex is None or size is None:
        faults.add(
            CONTENT_MISSING,
            f"the rendered content {expect['content_ref']} is neither stored nor supplied "
            "with the command (supplied content is matched by SHA-256)",
            "/content~1ref",
        )
        # What the manifest declares can still exceed its own limit.
        size = expect["size"]
    else:
        if sha256_hex != expect["sha256"]:
            actual = "sha256:" + hex_to_b64u(sha256_hex)
            what = (
                f"the only content supplied with the command ({size} bytes) is not this "
                "manifest's: its SHA-256 is"
                if supplied
                else "the content's SHA-256 is"
            )
            faults.add(
                CONTENT_DIGEST,
                f"{what} {actual}, content/digest says {expect['content_digest']}",
                "/content~1digest",
                actual=actual,
                expected=expect["content_digest"],
                supplied=True if supplied else None,
            )
        if size != expect["size"]:
            faults.add(
                CONTENT_SIZE,
                f"the content is {size} bytes, content/size-bytes says {expect['size']}",
                "/content~1size-bytes",
            )
    if size > expect["bytes_max"]:
        faults.add(
            CONTENT_OVER_LIMIT,
            f"the content is {size} bytes, over bytes/max {expect['bytes_max']}; "
            "evidence is never truncated",
            "/bytes~1max",
        )
    return faults


def _carried_digests(ref: str) -> list[str]:
    """``X`` for every ``sha256:X`` in the ref's ``:``-separated segments."""
    parts = ref.split(":")
    return [parts[i + 1] for i in range(len(parts) - 1) if parts[i] == "sha256"]


def check_ref_self_digest(doc: Mapping[str, Any]) -> Faults:
    """Refs whose own text carries ``sha256:X`` must have the digest ``sha256:X``.

    Covers each item (``ref`` against ``digest``, pointer at the digest) and the content
    (``content/ref`` must be ``object-store:`` + ``content/digest``, pointer at the ref).
    Texts are compared exactly. Members of the wrong type are skipped (schema faults).

    Args:
        doc: the parsed manifest.

    Returns:
        Faults holding ``manifest.ref-digest`` errors in document order; empty when all agree.
    """
    faults = Faults()
    for pointer, ref, digest in item_ref_digests(doc):
        for carried in _carried_digests(ref):
            if digest != "sha256:" + carried:
                faults.add(
                    REF_DIGEST,
                    f"ref {ref!r} carries sha256:{carried} but its digest is {digest!r}",
                    pointer,
                    ref=ref,
                    digest=digest,
                )
                break
    content_ref, content_digest = doc.get("content/ref"), doc.get("content/digest")
    if isinstance(content_ref, str) and isinstance(content_digest, str):
        if content_ref != "object-store:" + content_digest:
            faults.add(
                REF_DIGEST,
                f"content/ref is {content_ref!r}, not 'object-store:' + content/digest "
                f"({content_digest!r})",
                "/content~1ref",
                ref=content_ref,
                digest=content_digest,
            )
    return faults


def item_ref_digests(doc: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The (ref -> digest) bindings a manifest asserts, for the write-time rebinding check.

    Args:
        doc: a manifest that passed :func:`validate` (items that are not objects, or whose
            ref or digest is not a string, are skipped).

    Returns:
        ``[(pointer, ref, digest), ...]`` for each item in order, the pointer at the item's
        digest (``/items/3/digest``), which is what a ``manifest.ref-rebound`` fault names. A
        ref may appear more than once; the store must treat an earlier item of the same
        manifest like an earlier manifest.
    """
    out: list[tuple[str, str, str]] = []
    for i, item in _items(doc):
        ref, digest = item.get("ref"), item.get("digest")
        if isinstance(ref, str) and isinstance(digest, str):
            out.append((f"/items/{i}/digest", ref, digest))
    return out

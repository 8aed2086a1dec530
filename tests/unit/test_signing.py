"""Approval signatures: what is signed, and what breaks a signature."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from orchestration.plan.encoding import canonical_digest
from orchestration.review.approval import approval_record, canonical_record
from orchestration.review.signing import (
    SigningKeyError,
    key_id,
    load_private_key,
    load_public_key,
    sign_approval,
    signature_problem,
)
from orchestration.testing import PlanSketch
from orchestration.types import ApprovalRecord, AuthorityClaim, StringField

OPERATOR = Ed25519PrivateKey.generate()


def record() -> ApprovalRecord:
    view = PlanSketch("p").entry(StringField(path="s")).view()
    return approval_record(view, "op", "2026-01-01T00:00:00Z")


def test_an_unsigned_record_keeps_its_wire_form_and_digest() -> None:
    """No signature means no "signature" key, so older records and digests are unchanged."""
    unsigned = record()
    assert "signature" not in unsigned.model_dump_json()
    signed = sign_approval(unsigned, OPERATOR)
    assert ApprovalRecord.model_validate_json(signed.model_dump_json()) == signed
    assert canonical_digest(signed.model_copy(update={"signature": None})) == canonical_digest(
        unsigned
    )


def test_any_change_after_signing_breaks_the_signature() -> None:
    """Every field is covered: changing who decided, or the digest, fails verification."""
    signed = sign_approval(record(), OPERATOR)
    keys = {key_id(OPERATOR.public_key()): OPERATOR.public_key()}
    assert signature_problem(signed, keys) is None
    for change in ({"decided_by": "mallory"}, {"digest": "0" * 64}, {"plan_id": "q"}):
        problem = signature_problem(signed.model_copy(update=change), keys)
        assert problem is not None and "altered" in problem
    assert "does not trust" in (signature_problem(signed, {}) or "")
    assert "not signed" in (signature_problem(record(), keys) or "")


def test_a_signature_survives_the_store_sorting_the_authority_set() -> None:
    """A record signed with its claims in any order verifies in the canonical stored order."""
    claims = (
        AuthorityClaim(capability="mail", scope="x", verb="create"),
        AuthorityClaim(capability="files", scope="out", verb="read"),
    )
    unsorted = record().model_copy(update={"authority_set": claims})
    signed = sign_approval(unsorted, OPERATOR)
    keys = {key_id(OPERATOR.public_key()): OPERATOR.public_key()}
    stored = canonical_record(signed)
    assert stored.authority_set == claims[::-1]
    assert signature_problem(signed, keys) is None
    assert signature_problem(stored, keys) is None
    dropped = stored.model_copy(update={"authority_set": claims[:1]})
    assert "altered" in (signature_problem(dropped, keys) or "")


def test_keys_load_from_pem_and_other_kinds_are_refused() -> None:
    """PEM Ed25519 keys load; a public key where a private one is expected is refused."""
    private_pem = OPERATOR.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    public_pem = OPERATOR.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    loaded = load_private_key(private_pem)
    assert key_id(loaded.public_key()) == key_id(load_public_key(public_pem))
    with pytest.raises(SigningKeyError):
        load_private_key(public_pem)
    with pytest.raises(SigningKeyError):
        load_public_key(b"not a key")

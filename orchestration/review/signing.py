"""Signed approvals: an operator's Ed25519 signature binds an approval record to its signer.

The digest check at the start of a run proves that the plan is the one the record names; it
cannot prove that an operator made the record, since anyone who can start workflows can also
build an approval. A signature closes that gap: the operator tool signs with a private key only
the operator holds, and workers hold only public keys, so a service with access to the
namespace still cannot run content no operator approved.

What is signed: the ASCII bytes ``orchestration.review.approval.v1:<digest>``, where ``<digest>`` is
the canonical digest (:func:`orchestration.plan.encoding.canonical_digest`) of the record with its
signature removed and its authority set in canonical order. Changing any field of the record
(the plan digest above all) changes that digest, so a record altered after signing fails
verification; listing the same claims in another order does not. The prefix keeps a signature
made here from being valid for any other message the same key might sign.

Pure functions over key objects; reading key files is the caller's business.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)

from orchestration.errors import OrchestrationError
from orchestration.plan.encoding import canonical_digest
from orchestration.review.approval import canonical_record
from orchestration.types import ApprovalRecord, ApprovalSignature

__all__ = [
    "SigningKeyError",
    "approval_message",
    "key_id",
    "load_private_key",
    "load_public_key",
    "public_keys_by_id",
    "sign_approval",
    "signature_problem",
]

_DOMAIN = b"orchestration.review.approval.v1:"


class SigningKeyError(OrchestrationError):
    """A key file is not an Ed25519 key in PEM form."""

    code = "signing_key"


def key_id(public_key: Ed25519PublicKey) -> str:
    """The key's fingerprint: the first 16 hex digits of sha256 over its raw 32 bytes."""
    raw = public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def approval_message(record: ApprovalRecord) -> bytes:
    """The bytes a signature covers: the domain prefix and the unsigned record's digest.

    The digest is taken over the record with its authority set in canonical order: the set is
    a set (any order approves the same plan, and the store keeps the sorted form), so the order
    a client listed it in must not decide whether its signature verifies.
    """
    unsigned = canonical_record(record).model_copy(update={"signature": None})
    return _DOMAIN + canonical_digest(unsigned).encode("ascii")


def sign_approval(record: ApprovalRecord, private_key: Ed25519PrivateKey) -> ApprovalRecord:
    """The record with an Ed25519 signature over every other field."""
    value = private_key.sign(approval_message(record))
    signature = ApprovalSignature(
        key_id=key_id(private_key.public_key()), value=base64.b64encode(value).decode("ascii")
    )
    return record.model_copy(update={"signature": signature})


def signature_problem(record: ApprovalRecord, keys: Mapping[str, Ed25519PublicKey]) -> str | None:
    """Why ``record`` is not signed by one of ``keys`` (by key id), or ``None`` when it is."""
    signature = record.signature
    if signature is None:
        return "the approval is not signed, and this worker runs only signed approvals"
    public_key = keys.get(signature.key_id)
    if public_key is None:
        return f"the approval is signed by key {signature.key_id}, which this worker does not trust"
    try:
        value = base64.b64decode(signature.value, validate=True)
    except binascii.Error:
        return "the approval's signature is not valid base64"
    try:
        public_key.verify(value, approval_message(record))
    except InvalidSignature:
        return (
            f"the approval's signature by key {signature.key_id} does not match the record: "
            "it was altered after signing, or signed by another key"
        )
    return None


def load_private_key(pem: bytes) -> Ed25519PrivateKey:
    """An Ed25519 private key from unencrypted PKCS#8 PEM (``openssl genpkey -algorithm ed25519``).

    Raises:
        SigningKeyError: not an unencrypted Ed25519 private key.

    """
    try:
        key = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(f"not an unencrypted PEM private key: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"approvals are signed with Ed25519 keys, not {type(key).__name__}")
    return key


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM (``openssl pkey -pubout``).

    Raises:
        SigningKeyError: not an Ed25519 public key.

    """
    try:
        key = load_pem_public_key(pem)
    except ValueError as exc:
        raise SigningKeyError(f"not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(f"approvals are verified with Ed25519 keys, not {type(key).__name__}")
    return key


def public_keys_by_id(keys: Iterable[Ed25519PublicKey]) -> dict[str, Ed25519PublicKey]:
    """``key_id -> key`` for the keys a worker trusts."""
    return {key_id(key): key for key in keys}

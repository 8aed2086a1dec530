"""Encrypted payloads: an AES-GCM ``PayloadCodec`` with key ids and rotation.

Everything a plan run puts in Temporal's history (the frozen plan with its staged arguments,
node outputs, the run-event log) is a payload. With this codec on the client (and so on every
worker built on it), each payload leaves the process encrypted and the server, its database and
anyone who can read the namespace see only ciphertext. An operator who holds a key sees the
values through the codec server (:mod:`workers.codec_server`) in the Temporal UI or CLI.

Wire form of an encrypted payload: metadata ``encoding = binary/encrypted`` and
``encryption-key-id = <key id>``; data ``nonce (12 bytes) || AES-GCM(serialized inner payload)``
with the key id as associated data, so a ciphertext cannot be relabelled with another key id.

Rotation: the codec holds several keys in order; it encrypts with the newest (the last) and
decrypts with whichever key the payload names. Retire a key only once no history that needs
it is retained. A payload that is not encrypted (history written before encryption was turned
on) is passed through unchanged on decode.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable, Mapping, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from orchestration.errors import OrchestrationError

__all__ = [
    "ENCODING",
    "KEY_ID_KEY",
    "KEYS_ENV",
    "AesGcmCodec",
    "CodecDecryptError",
    "CodecKeyError",
    "codec_from_env",
    "new_key_spec",
    "parse_keys",
]

ENCODING = b"binary/encrypted"
"""The ``encoding`` metadata of an encrypted payload."""

KEY_ID_KEY = "encryption-key-id"
"""The metadata key naming the key a payload was encrypted with."""

KEYS_ENV = "ORCH_CODEC_KEYS"
"""Environment variable holding ``id:base64key`` pairs, comma separated, oldest first."""

_NONCE = 12


class CodecKeyError(OrchestrationError):
    """A key is malformed, or a payload names a key this codec does not hold."""

    code = "codec_key"


class CodecDecryptError(OrchestrationError):
    """A payload failed authentication: the key material is wrong or the data was altered."""

    code = "codec_decrypt_failed"


def parse_keys(spec: str) -> dict[str, bytes]:
    """Parse ``id:base64key,id:base64key`` (oldest first) into an ordered key map.

    Raises:
        CodecKeyError: an entry is not ``id:key``, a key is not base64 of 16, 24 or 32 bytes,
            or an id repeats.

    """
    keys: dict[str, bytes] = {}
    for entry in (part.strip() for part in spec.split(",")):
        if not entry:
            continue
        key_id, sep, encoded = entry.partition(":")
        if not sep or not key_id:
            raise CodecKeyError(f"a codec key entry must be 'id:base64key', got {entry[:8]!r}...")
        try:
            key = base64.b64decode(encoded, validate=True)
        except binascii.Error as exc:
            raise CodecKeyError(f"codec key {key_id!r} is not valid base64") from exc
        if key_id in keys:
            raise CodecKeyError(f"codec key id {key_id!r} appears twice")
        keys[key_id] = key
    return keys


class AesGcmCodec(PayloadCodec):
    """Encrypts every payload with AES-GCM; encodes with the newest key, decodes with any.

    Args:
        keys: ``key id -> key`` (16, 24 or 32 bytes), oldest first; the last one encrypts.

    Raises:
        CodecKeyError: no keys, or a key of the wrong length.

    """

    def __init__(self, keys: Mapping[str, bytes]) -> None:
        if not keys:
            raise CodecKeyError("an encrypting codec needs at least one key")
        self._ciphers: dict[str, AESGCM] = {}
        for key_id, key in keys.items():
            if len(key) not in (16, 24, 32):
                raise CodecKeyError(
                    f"codec key {key_id!r} is {len(key)} bytes; AES-GCM takes 16, 24 or 32"
                )
            self._ciphers[key_id] = AESGCM(key)
        self.key_ids: tuple[str, ...] = tuple(keys)
        self.current_key_id = self.key_ids[-1]

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt each payload (metadata and data) with the newest key."""
        cipher = self._ciphers[self.current_key_id]
        aad = self.current_key_id.encode()
        out = []
        for payload in payloads:
            nonce = os.urandom(_NONCE)
            sealed = cipher.encrypt(nonce, payload.SerializeToString(), aad)
            out.append(
                Payload(
                    metadata={"encoding": ENCODING, KEY_ID_KEY: aad},
                    data=nonce + sealed,
                )
            )
        return out

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt each encrypted payload with the key it names; pass the others through.

        Raises:
            CodecKeyError: the payload names a key this codec does not hold.
            CodecDecryptError: the key does not open the payload (wrong key, altered data).

        """
        return [self._open(payload) for payload in payloads]

    def _open(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        key_id = payload.metadata.get(KEY_ID_KEY, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise CodecKeyError(
                f"the payload was encrypted with key {key_id!r}, which this codec does not hold "
                f"(it holds {', '.join(repr(k) for k in self.key_ids)}); configure that key in "
                f"{KEYS_ENV} to read it"
            )
        data = payload.data
        try:
            plain = cipher.decrypt(data[:_NONCE], data[_NONCE:], key_id.encode())
        except InvalidTag as exc:
            raise CodecDecryptError(
                f"the payload encrypted with key {key_id!r} does not decrypt with the key held "
                "under that id: the key material is wrong or the payload was altered"
            ) from exc
        inner = Payload()
        inner.ParseFromString(plain)
        return inner


def codec_from_env(environ: Mapping[str, str] | None = None) -> AesGcmCodec | None:
    """The codec configured by ``ORCH_CODEC_KEYS``, or ``None`` when encryption is off."""
    spec = (os.environ if environ is None else environ).get(KEYS_ENV, "").strip()
    return AesGcmCodec(parse_keys(spec)) if spec else None


def new_key_spec(key_ids: Iterable[str]) -> str:
    """Fresh random 256-bit keys for ``key_ids``, as an ``ORCH_CODEC_KEYS`` value."""
    return ",".join(f"{k}:{base64.b64encode(os.urandom(32)).decode()}" for k in key_ids)

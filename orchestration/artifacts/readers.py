"""Spool readers: how an artifact reaches its bytes, and the in-memory reader.

An artifact never holds its bytes in a plan or a run log: it holds a reader, and persists as
the reader's ``{tag, locator}`` pointer (an :class:`~orchestration.types.ArtifactHandle`). The
``tag`` names the kind of store; a **resolver** registered for that tag turns a locator back
into a reader on whichever process reads the handle (see
:class:`~orchestration.artifacts.registry.ArtifactRegistry`).

The in-memory reader is the one exception to "pointers, not bytes": its locator *is* the bytes,
base64-encoded, so the handle is self-contained and survives a resume with no store at all, at
the price of carrying the bytes through Temporal history and counting against the plan's
``maxEncodedBytes``. A durable spool store is the right choice for anything large.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from orchestration.errors import ArtifactUnreadableError

__all__ = ["MEMORY_TAG", "InMemoryReader", "ReaderResolver", "SpoolReader", "memory_resolver"]

MEMORY_TAG = "memory"
"""The tag of inline (base64) handles; its resolver is always registered."""


@runtime_checkable
class SpoolReader(Protocol):
    """Reads one artifact's bytes, and names where they are."""

    @property
    def tag(self) -> str:
        """The store kind: which resolver rebinds this reader's locator."""
        ...

    @property
    def locator(self) -> str:
        """Where the bytes are, in the store's own terms (never the bytes, except in memory)."""
        ...

    def read(self) -> bytes:
        """All of the artifact's bytes.

        Raises:
            ArtifactUnreadableError: the bytes are gone or cannot be read.

        """
        ...


ReaderResolver = Callable[[str], SpoolReader]
"""Turns a locator back into a reader; registered per tag."""


class InMemoryReader:
    """Bytes held in memory; the locator is their base64 encoding."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)

    @property
    def tag(self) -> str:
        """``"memory"``."""
        return MEMORY_TAG

    @property
    def locator(self) -> str:
        """The bytes, base64-encoded."""
        return base64.b64encode(self._data).decode("ascii")

    def read(self) -> bytes:
        """The bytes."""
        return self._data

    def size(self) -> int:
        """How many bytes."""
        return len(self._data)

    @classmethod
    def from_locator(cls, locator: str) -> InMemoryReader:
        """The reader a locator describes.

        Raises:
            ArtifactUnreadableError: the locator is not strict base64.

        """
        try:
            return cls(base64.b64decode(locator.encode("ascii"), validate=True))
        except (binascii.Error, UnicodeEncodeError) as exc:
            raise ArtifactUnreadableError(
                f"in-memory artifact locator is not base64 ({exc}); the handle was altered"
            ) from exc


def memory_resolver(locator: str) -> SpoolReader:
    """The resolver of ``memory`` handles (registered in every registry)."""
    return InMemoryReader.from_locator(locator)

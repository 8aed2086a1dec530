"""Spool stores: where a tool puts an artifact's bytes, so the run only carries a handle.

Two implementations of :class:`ArtifactSpool`:

* :class:`MemorySpool`: the bytes ride inside the handle (base64). Nothing to deploy, and the
  handle survives a resume by itself, but the bytes pass through Temporal history, so keep it
  for small artifacts and tests.
* :class:`FileSpoolStore`: the embedded default. Bytes go to a folder (content-addressed by
  SHA-256, written atomically), the handle holds only the digest, and any worker that mounts
  the same folder and registers :meth:`FileSpoolStore.resolver` under the store's tag reads
  them, which is what lets a run resume on another worker. A retried tool that spools the same
  bytes again writes the same file: puts are idempotent.

This module does file I/O and is never imported by workflow code.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from orchestration.artifacts.base import SpooledArtifact
from orchestration.artifacts.readers import InMemoryReader, SpoolReader
from orchestration.errors import ArtifactUnreadableError

__all__ = ["FS_TAG", "ArtifactSpool", "FileReader", "FileSpoolStore", "MemorySpool"]

FS_TAG = "fs"
"""The default tag of file-system spool handles."""

A = TypeVar("A", bound=SpooledArtifact)

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


@runtime_checkable
class ArtifactSpool(Protocol):
    """Somewhere a tool can put bytes and get an artifact (and so a handle) back."""

    def put(self, data: bytes, artifact_class: type[A]) -> A:
        """Store ``data`` and return an artifact of ``artifact_class`` reading it."""
        ...


class MemorySpool:
    """Keeps the bytes inside the handle; see the module docstring for when that is wise."""

    def put(self, data: bytes, artifact_class: type[A]) -> A:
        """An artifact whose handle carries ``data`` inline."""
        return artifact_class(InMemoryReader(data))


class FileReader:
    """Reads one spooled file; its locator is the file's SHA-256 hex digest."""

    __slots__ = ("_path", "_digest", "_tag")

    def __init__(self, root: Path, digest: str, tag: str = FS_TAG) -> None:
        if not _DIGEST.match(digest):
            raise ArtifactUnreadableError(
                f"file-spool locator {digest!r} is not a SHA-256 hex digest; the handle was "
                "altered or comes from another store"
            )
        self._path = root / digest[:2] / digest
        self._digest = digest
        self._tag = tag

    @property
    def tag(self) -> str:
        """The store's tag."""
        return self._tag

    @property
    def locator(self) -> str:
        """The content digest."""
        return self._digest

    @property
    def path(self) -> Path:
        """Where the bytes are."""
        return self._path

    def size(self) -> int:
        """The file's size in bytes (without reading it)."""
        try:
            return self._path.stat().st_size
        except OSError as exc:
            raise ArtifactUnreadableError(f"spooled artifact {self._path}: {exc}") from exc

    def read(self) -> bytes:
        """The file's bytes, checked against the digest the locator names.

        Raises:
            ArtifactUnreadableError: the file is missing, unreadable or altered.

        """
        try:
            data = self._path.read_bytes()
        except OSError as exc:
            raise ArtifactUnreadableError(
                f"spooled artifact {self._digest} cannot be read from {self._path}: "
                f"{exc.strerror or exc}; is the spool folder shared with this worker?"
            ) from exc
        if hashlib.sha256(data).hexdigest() != self._digest:
            raise ArtifactUnreadableError(
                f"spooled artifact {self._path} no longer matches its digest {self._digest}"
            )
        return data


class FileSpoolStore:
    """A content-addressed spool folder (see the module docstring).

    Args:
        root: The folder (created on first put).
        tag: The tag its handles carry; register :meth:`resolver` under the same tag.

    """

    def __init__(self, root: str | os.PathLike[str], tag: str = FS_TAG) -> None:
        self.root = Path(root)
        self.tag = tag

    def put(self, data: bytes, artifact_class: type[A]) -> A:
        """Write ``data`` (once per content) and return an artifact reading it."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.root / digest[:2] / digest
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{digest[:8]}.")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        return artifact_class(FileReader(self.root, digest, self.tag))

    def reader(self, locator: str) -> SpoolReader:
        """The reader of a locator this store wrote (the store's resolver)."""
        return FileReader(self.root, locator, self.tag)

    @property
    def resolver(self) -> FileSpoolResolver:
        """The resolver to register under :attr:`tag`."""
        return FileSpoolResolver(self)


class FileSpoolResolver:
    """A picklable resolver bound to one store (``locator -> reader``)."""

    __slots__ = ("store",)

    def __init__(self, store: FileSpoolStore) -> None:
        self.store = store

    def __call__(self, locator: str) -> SpoolReader:
        """The reader of ``locator``."""
        return self.store.reader(locator)

"""Handles, resolvers and the file-system spool: pointers persist, bytes stay in the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestration.artifacts import (
    ArtifactRegistry,
    FileSpoolStore,
    MemorySpool,
    SpooledArtifact,
    SpooledJsonArtifact,
)
from orchestration.errors import (
    ArtifactUnreadableError,
    NoReaderResolverError,
    UnknownArtifactClassError,
)
from orchestration.types import ArtifactHandle


def test_file_spool_handles_hold_a_digest_not_the_bytes(tmp_path: Path) -> None:
    """A spooled artifact's handle is its content digest; the bytes are in the folder."""
    store = FileSpoolStore(tmp_path)
    art = store.put(b'{"a": 1}', SpooledJsonArtifact)
    handle = art.encode()
    assert handle.tag == "fs" and len(handle.locator) == 64
    assert b'"a"' not in handle.model_dump_json().encode()
    assert (tmp_path / handle.locator[:2] / handle.locator).read_bytes() == b'{"a": 1}'


def test_puts_are_idempotent(tmp_path: Path) -> None:
    """Spooling the same bytes twice (a retried tool) yields one file and the same handle."""
    store = FileSpoolStore(tmp_path)
    first = store.put(b"same", SpooledArtifact).encode()
    second = store.put(b"same", SpooledArtifact).encode()
    assert first == second
    assert len([p for p in tmp_path.rglob("*") if p.is_file()]) == 1


def test_another_process_reopens_through_its_own_resolver(tmp_path: Path) -> None:
    """A registry with a resolver over the same folder (another worker) reads the artifact."""
    handle = FileSpoolStore(tmp_path).put(b'{"k": [1, 2]}', SpooledJsonArtifact).encode()
    other = FileSpoolStore(tmp_path)
    registry = ArtifactRegistry({other.tag: other.resolver})
    art = registry.open(handle)
    assert isinstance(art, SpooledJsonArtifact) and art.json_get("$.k[1]") == 2


def test_a_missing_resolver_names_the_tag(tmp_path: Path) -> None:
    """Opening a handle whose tag has no resolver raises E_NO_READER_RESOLVER naming it."""
    handle = FileSpoolStore(tmp_path, tag="vault").put(b"x", SpooledArtifact).encode()
    with pytest.raises(NoReaderResolverError) as raised:
        ArtifactRegistry().open(handle)
    assert raised.value.code == "E_NO_READER_RESOLVER"
    assert raised.value.tag == "vault" and "'vault'" in raised.value.message


def test_unknown_class_and_altered_locators_are_refused(tmp_path: Path) -> None:
    """An unregistered class name, a non-digest locator and a tampered file are named errors."""
    registry = ArtifactRegistry({"fs": FileSpoolStore(tmp_path).resolver})
    with pytest.raises(UnknownArtifactClassError, match="yaml"):
        registry.open(ArtifactHandle(tag="memory", locator="", artifact_class="yaml"))
    with pytest.raises(ArtifactUnreadableError, match="not a SHA-256"):
        registry.open(ArtifactHandle(tag="fs", locator="../../etc/passwd"))
    handle = FileSpoolStore(tmp_path).put(b"original", SpooledArtifact).encode()
    (tmp_path / handle.locator[:2] / handle.locator).write_bytes(b"changed")
    with pytest.raises(ArtifactUnreadableError, match="no longer matches"):
        registry.open(handle).data()


def test_memory_spool_inlines_the_bytes() -> None:
    """The in-memory spool's handle carries the bytes (base64) and needs no store to reopen."""
    handle = MemorySpool().put(b"hello", SpooledArtifact).encode()
    assert handle.tag == "memory" and handle.locator == "aGVsbG8="
    assert ArtifactRegistry().open(handle).text() == "hello"
    with pytest.raises(ArtifactUnreadableError):
        ArtifactRegistry().open(ArtifactHandle(tag="memory", locator="%%%")).data()

"""``ArtifactRegistry``: turns a persisted handle back into a working artifact.

A handle ``{tag, locator, artifactClass}`` is all a run ever keeps of an artifact. Reopening it
needs two things only the reading process has: a **resolver** for the tag (the live binding a
locator cannot carry: a spool folder, a bucket client) and the **class** the name stands for.
Both are registered here, per process. The in-memory resolver and the three built-in classes
are always registered; a durable store's resolver must be registered by whoever deploys it,
on every worker that may read its handles. That registration is what makes a transform work
after a resume, so a missing one is a named node failure (``E_NO_READER_RESOLVER``), never a
guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from orchestration.artifacts.base import SpooledArtifact
from orchestration.artifacts.json_artifact import SpooledJsonArtifact
from orchestration.artifacts.markdown import SpooledMarkdownArtifact
from orchestration.artifacts.readers import MEMORY_TAG, ReaderResolver, SpoolReader, memory_resolver
from orchestration.errors import NoReaderResolverError, UnknownArtifactClassError
from orchestration.types import ArtifactHandle

__all__ = ["BUILTIN_CLASSES", "ArtifactRegistry"]

BUILTIN_CLASSES: tuple[type[SpooledArtifact], ...] = (
    SpooledArtifact,
    SpooledJsonArtifact,
    SpooledMarkdownArtifact,
)
"""Always registered: ``text``, ``json`` and ``markdown``."""


class ArtifactRegistry:
    """Reader resolvers by tag and artifact classes by name, for one process.

    Args:
        resolvers: Extra resolvers by tag (the ``memory`` resolver is always present; a tag
            given here replaces a built-in one).
        classes: Extra artifact classes, each registered under its ``artifact_class`` name.

    """

    def __init__(
        self,
        resolvers: Mapping[str, ReaderResolver] | None = None,
        classes: Iterable[type[SpooledArtifact]] = (),
    ) -> None:
        self._resolvers: dict[str, ReaderResolver] = {MEMORY_TAG: memory_resolver}
        self._classes: dict[str, type[SpooledArtifact]] = {}
        for tag, resolver in (resolvers or {}).items():
            self.register_resolver(tag, resolver)
        for cls in (*BUILTIN_CLASSES, *classes):
            self.register_class(cls)

    def register_resolver(self, tag: str, resolver: ReaderResolver) -> None:
        """Register (or replace) the resolver of ``tag``."""
        self._resolvers[tag] = resolver

    def register_class(self, cls: type[SpooledArtifact]) -> None:
        """Register ``cls`` under its ``artifact_class`` name (a later class replaces one)."""
        self._classes[cls.artifact_class] = cls

    @property
    def tags(self) -> tuple[str, ...]:
        """The registered tags, sorted."""
        return tuple(sorted(self._resolvers))

    def artifact_class(self, name: str | None) -> type[SpooledArtifact]:
        """The class a handle's ``artifactClass`` names (``None`` means plain text).

        Raises:
            UnknownArtifactClassError: naming the registered classes.

        """
        cls = self._classes.get(name or SpooledArtifact.artifact_class)
        if cls is None:
            known = ", ".join(sorted(self._classes))
            raise UnknownArtifactClassError(
                f"artifact class {name!r} is not registered in this process (registered: "
                f"{known}); register the class that wrote the handle"
            )
        return cls

    def reader(self, handle: ArtifactHandle) -> SpoolReader:
        """The reader for a handle's locator.

        Raises:
            NoReaderResolverError: no resolver is registered for the handle's tag.

        """
        resolver = self._resolvers.get(handle.tag)
        if resolver is None:
            raise NoReaderResolverError(handle.tag, self.tags)
        return resolver(handle.locator)

    def open(self, handle: ArtifactHandle) -> SpooledArtifact:
        """A working artifact of the handle's class over the handle's bytes.

        Raises:
            NoReaderResolverError: the tag has no resolver.
            UnknownArtifactClassError: the class name is not registered.
            ArtifactUnreadableError: the resolver refused the locator.

        """
        cls = self.artifact_class(handle.artifact_class)
        return cls(self.reader(handle))

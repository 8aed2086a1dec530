"""Spooled artifacts: bytes kept out of the plan, read by transforms through their own methods.

A tool that produces something large or structured returns an artifact (written to a spool);
the run keeps only its handle ``{tag, locator, artifactClass}``; a ``transform`` reopens it
through an :class:`ArtifactRegistry` and applies the class's descriptor-named methods.
"""

from orchestration.artifacts.base import BASE_METHODS, TOKEN_ENCODINGS, SpooledArtifact
from orchestration.artifacts.json_artifact import JSON_METHODS, SpooledJsonArtifact
from orchestration.artifacts.markdown import MARKDOWN_METHODS, SpooledMarkdownArtifact
from orchestration.artifacts.methods import ArtifactMethodDescriptor, effective_tool_methods
from orchestration.artifacts.readers import (
    MEMORY_TAG,
    InMemoryReader,
    ReaderResolver,
    SpoolReader,
    memory_resolver,
)
from orchestration.artifacts.registry import BUILTIN_CLASSES, ArtifactRegistry
from orchestration.artifacts.serialise import EMPTY_LIST, default_serialise
from orchestration.artifacts.spool import (
    FS_TAG,
    ArtifactSpool,
    FileReader,
    FileSpoolStore,
    MemorySpool,
)
from orchestration.artifacts.steps import apply_steps, emit_items, run_transform

__all__ = [
    "BASE_METHODS",
    "BUILTIN_CLASSES",
    "EMPTY_LIST",
    "FS_TAG",
    "JSON_METHODS",
    "MARKDOWN_METHODS",
    "MEMORY_TAG",
    "TOKEN_ENCODINGS",
    "ArtifactMethodDescriptor",
    "ArtifactRegistry",
    "ArtifactSpool",
    "FileReader",
    "FileSpoolStore",
    "InMemoryReader",
    "MemorySpool",
    "ReaderResolver",
    "SpoolReader",
    "SpooledArtifact",
    "SpooledJsonArtifact",
    "SpooledMarkdownArtifact",
    "apply_steps",
    "default_serialise",
    "effective_tool_methods",
    "emit_items",
    "memory_resolver",
    "run_transform",
]

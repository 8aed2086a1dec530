"""Decoding a model's tool-call arguments strictly: JSON objects only, no ``NaN``/``Infinity``."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["decode_arguments"]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_arguments(raw: Any) -> tuple[Any, str | None]:
    """``(arguments, None)`` when ``raw`` decodes, else ``(None, why)``.

    A provider sends arguments as JSON text (OpenAI) or as an already-decoded object (Anthropic,
    and some OpenAI-compatible servers); both are accepted.
    """
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return None, f"the arguments are a {type(raw).__name__}, not a JSON object"
    try:
        return json.loads(raw, parse_constant=_refuse_constant), None
    except (ValueError, RecursionError) as exc:
        return None, f"{exc}"

"""``default_serialise``: a transform's final result as text, when its descriptor says nothing.

A transform that emits ``{as: "value"}`` into a ``string`` field converts its final result to a
string exactly once, at the end (chaining between steps always passes the raw result). The
descriptor's own ``serialise`` wins; this function is the fallback, and its rules are pinned so
every implementation renders a result the same way:

* ``None`` → ``"null"``; a string → itself;
* a list of strings → ``"(empty list)"`` when empty, else the strings joined with newlines (an
  empty list of anything counts as a list of strings);
* a boolean → ``"true"``/``"false"``; an integer → its decimal digits; a float → its shortest
  round-tripping form, with no ``.0`` on an integral value below 10**21 (as JSON writers do);
* anything else → its JSON wire form (tags for the non-JSON encodable values, such as
  ``$datetime``), indented by two spaces; a value outside the encodable subset falls back to
  plain JSON with ``str`` for what JSON cannot hold, so serialising never fails.
"""

from __future__ import annotations

import json
import math
from typing import Any

from orchestration.errors import ValueRefusedError
from orchestration.plan.encoding import to_json_value

__all__ = ["EMPTY_LIST", "default_serialise"]

EMPTY_LIST = "(empty list)"
"""What an empty list reads as, so an empty result is visibly empty rather than blank."""


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def default_serialise(value: Any) -> str:
    """The result as text, by the rules in the module docstring."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return "\n".join(value) if value else EMPTY_LIST
    try:
        wire = to_json_value(value)
    except (ValueRefusedError, TypeError, ValueError, RecursionError):
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return json.dumps(wire, indent=2, ensure_ascii=False)

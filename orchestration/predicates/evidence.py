"""Evidence values: what a cell records about a verdict, kept small and always encodable.

Evidence lands in the run's history (on the edges a verdict fires, and with every verdict the
run records), so it must be an encodable value and must stay small whatever the predicate
read: a 10 MB string or a list of a million rows is shown cut down, never copied whole. The
shape of a cell's evidence is described on :class:`~orchestration.tools.contracts.Judgement`.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any, Final

__all__ = ["MAX_CHECKS", "MAX_ITEMS", "MAX_TEXT", "shown"]

MAX_CHECKS: Final = 32
"""How many leaf checks a structured verdict's evidence lists; ``omitted`` counts the rest."""
MAX_TEXT: Final = 200
"""Characters (or bytes) of a string (or bytes value) shown before it is cut."""
MAX_ITEMS: Final = 16
"""Entries of a list, map or set shown before the rest is summarised."""
_MAX_NESTING: Final = 4


def shown(value: Any, depth: int = 0) -> Any:
    """``value`` as evidence: encodable, bounded in size, and deterministic.

    Strings and bytes longer than :data:`MAX_TEXT` are cut (a string ends with ``…(+N
    chars)``); containers keep their first :data:`MAX_ITEMS` entries (a list ends with a
    ``"…(+N more)"`` string, a map gains a ``"…"`` key saying how many were left out); sets
    become lists in a stable order; anything nested deeper than four levels, and any value
    outside the encodable subset, is shown as a short description. NaN (which has no canonical
    encoding) is shown as the string ``"NaN"``.
    """
    kind = type(value)
    if value is None or kind is bool or kind is int:
        return value
    if kind is float:
        return "NaN" if math.isnan(value) else value
    if kind is str:
        if len(value) <= MAX_TEXT:
            return value
        return f"{value[:MAX_TEXT]}…(+{len(value) - MAX_TEXT} chars)"
    if kind is bytes or kind is bytearray:
        return bytes(value[:MAX_TEXT])
    if kind is dt.datetime or kind is dt.timedelta:
        return value
    if kind is re.Pattern:
        return shown(value.pattern, depth)
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        items = list(value) if kind in (list, tuple) else sorted(value, key=repr)
        if depth >= _MAX_NESTING:
            return f"<list of {len(items)}>"
        out: list[Any] = [shown(v, depth + 1) for v in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            out.append(f"…(+{len(items) - MAX_ITEMS} more)")
        return out
    if kind is dict:
        if depth >= _MAX_NESTING:
            return f"<map of {len(value)}>"
        shown_map: dict[str, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index == MAX_ITEMS:
                shown_map["…"] = f"+{len(value) - MAX_ITEMS} more"
                break
            shown_map[key if type(key) is str else repr(key)] = shown(item, depth + 1)
        return shown_map
    return f"<{kind.__name__}>"

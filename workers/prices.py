"""The deployment's price table, read from a JSON file (``--prices``, ``ORCH_PRICES``).

The form is :meth:`orchestration.tools.pricing.PriceTable.from_mapping`'s; ``prices.example.json``
beside this module shows it with placeholder figures (not anyone's prices).
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestration.tools.pricing import PriceTable

__all__ = ["load_prices"]


def load_prices(path: str) -> PriceTable:
    """The price table in the JSON file ``path``.

    Raises:
        ValueError: the file cannot be read, is not JSON, or is not a price table.

    """
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the price table {path}: {exc}") from exc
    if not isinstance(document, dict):
        raise ValueError(f"the price table {path} must be a JSON object")
    return PriceTable.from_mapping(document)

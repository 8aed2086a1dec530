"""What a model's tokens cost: the deployment's price table.

Prices change and differ per contract, so none are built in: a deployment states its own
(``python -m workers --prices FILE``, env ``ORCH_PRICES``; the in-process host takes a
:class:`PriceTable`). A table maps model names to US dollars per million input and output
tokens; ``workers/prices.example.json`` shows the form with placeholder figures, which are
not anyone's current prices.

A reason attempt's cost is computed where it ran (the worker, or the in-process host) from
the tokens the provider reported, and recorded with the attempt; the run sums what was
recorded, so the figure a budget is kept against never depends on a table read later. A model
the table does not list has no price: its tokens are recorded as *unpriced* (``cost_usd`` is
``None``), and a run with a cost budget halts rather than guess (see
:mod:`orchestration.run.budgets`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ModelPrice", "PriceTable"]


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """US dollars per million input tokens and per million output tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """What so many tokens cost, in US dollars."""
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1_000_000


class PriceTable:
    """Prices by model name.

    A model is found by its exact name; else by the longest listed name it starts with
    followed by ``-`` (so ``gpt-4o-mini`` prices ``gpt-4o-mini-2024-07-18``, a dated snapshot
    the provider reports); else by the configured name the reasoner carries after its
    provider (``openai:gpt-4o-mini``), likewise.

    Args:
        prices: Model name to price.

    """

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self.prices = dict(prices or {})

    @classmethod
    def from_mapping(cls, document: Mapping[str, Any]) -> PriceTable:
        """A table from its JSON form (see ``workers/prices.example.json``).

        The form is ``{"models": {name: {"inputPerMillion": x, "outputPerMillion": y}}}``; a
        ``currency`` key, if present, must be ``USD``.

        Raises:
            ValueError: the document is not of that form, or a price is negative or not finite.

        """
        currency = document.get("currency", "USD")
        if currency != "USD":
            raise ValueError(f"prices must be in USD, got currency {currency!r}")
        models = document.get("models")
        if not isinstance(models, Mapping):
            raise ValueError('a price table is {"models": {"<model>": {"inputPerMillion": ...}}}')
        prices: dict[str, ModelPrice] = {}
        for name, entry in models.items():
            if not isinstance(entry, Mapping):
                raise ValueError(f"the price of model {name!r} must be an object")
            values = []
            for key in ("inputPerMillion", "outputPerMillion"):
                value = entry.get(key)
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"model {name!r} needs a number {key}")
                if not math.isfinite(value) or value < 0:
                    raise ValueError(f"model {name!r}: {key} must be a finite number >= 0")
                values.append(float(value))
            prices[str(name)] = ModelPrice(values[0], values[1])
        return cls(prices)

    def __len__(self) -> int:
        return len(self.prices)

    def _lookup(self, model: str) -> ModelPrice | None:
        found = self.prices.get(model)
        if found is not None:
            return found
        best = max(
            (name for name in self.prices if model.startswith(name + "-")),
            key=len,
            default=None,
        )
        return None if best is None else self.prices[best]

    def price(self, model: str, reasoner: str = "") -> ModelPrice | None:
        """The price of ``model`` (as the provider reported it), or of the reasoner's model."""
        if model:
            found = self._lookup(model)
            if found is not None:
                return found
        configured = reasoner.partition(":")[2] if ":" in reasoner else reasoner
        return self._lookup(configured) if configured else None

    def cost(
        self, model: str, input_tokens: int, output_tokens: int, reasoner: str = ""
    ) -> float | None:
        """What the tokens cost in US dollars, or ``None`` when the model has no price."""
        price = self.price(model, reasoner)
        return None if price is None else price.cost(input_tokens, output_tokens)

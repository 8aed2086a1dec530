"""Choosing a worker's reasoner from its environment.

=============================  ===============================================================
``ORCH_REASONER``              ``openai``, ``anthropic``, ``scripted``, or unset/``none`` (no
                               reasoner: reason nodes fail with ``no_reasoner``)
``ORCH_REASONER_BASE_URL``     the API root (defaults: ``https://api.openai.com/v1``,
                               ``https://api.anthropic.com``); point ``openai`` at any
                               compatible local server
``ORCH_REASONER_MODEL``        the model (defaults: ``gpt-4o-mini``, ``claude-3-5-haiku-latest``)
``ORCH_REASONER_API_KEY``      the key (falls back to ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``;
                               optional for a local server)
``ORCH_REASONER_TIMEOUT``      seconds per request (default 120)
``ORCH_REASONER_MAX_RETRIES``  retries of a 429/5xx/unreachable provider per turn (default 3)
``ORCH_REASONER_SCRIPT``       ``scripted`` only: a JSON file of answers by node id, one answer
                               or a list of one per model turn (the last repeats)
=============================  ===============================================================

``scripted`` is :class:`~orchestration.testing.ScriptedReasoner` answering every reason node
with a small example of its schema, or with what ``ORCH_REASONER_SCRIPT`` says (each answer is
the forced tool's arguments, so a script can answer invalidly to show the retry loop): a test
double for trying plans without a model, never a production setting.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from activities.reasoners.anthropic import AnthropicMessagesReasoner
from activities.reasoners.http import ProviderSettings
from activities.reasoners.openai import OpenAIChatReasoner
from orchestration.tools.reasoning import Reasoner
from orchestration.tools.scripted import ScriptedReasoner

__all__ = ["DEFAULTS", "reasoner_from_env"]

DEFAULTS = {
    "openai": ("https://api.openai.com/v1", "gpt-4o-mini", "OPENAI_API_KEY"),
    "anthropic": ("https://api.anthropic.com", "claude-3-5-haiku-latest", "ANTHROPIC_API_KEY"),
}


def reasoner_from_env(env: Mapping[str, str]) -> Reasoner | None:
    """The reasoner ``env`` describes (see the module docstring), or ``None`` for none.

    Raises:
        ValueError: ``ORCH_REASONER`` names no known provider, or a number does not parse.

    """
    kind = (env.get("ORCH_REASONER") or "").strip().lower()
    if kind in ("", "none"):
        return None
    if kind == "scripted":
        script = env.get("ORCH_REASONER_SCRIPT")
        if not script:
            return ScriptedReasoner()
        try:
            answers = json.loads(Path(script).read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"ORCH_REASONER_SCRIPT={script!r} is not a JSON file: {exc}") from exc
        if not isinstance(answers, dict):
            raise ValueError(f"ORCH_REASONER_SCRIPT={script!r} must hold an object by node id")
        return ScriptedReasoner(answers)
    if kind not in DEFAULTS:
        raise ValueError(f"ORCH_REASONER={kind!r} is not one of openai, anthropic, scripted, none")
    base_url, model, key_variable = DEFAULTS[kind]
    settings = ProviderSettings(
        base_url=env.get("ORCH_REASONER_BASE_URL") or base_url,
        model=env.get("ORCH_REASONER_MODEL") or model,
        api_key=env.get("ORCH_REASONER_API_KEY") or env.get(key_variable) or None,
        timeout_seconds=float(env.get("ORCH_REASONER_TIMEOUT") or 120),
        max_retries=int(env.get("ORCH_REASONER_MAX_RETRIES") or 3),
    )
    if kind == "openai":
        return OpenAIChatReasoner(settings)
    return AnthropicMessagesReasoner(settings)

"""Model providers behind :class:`~orchestration.tools.reasoning.Reasoner`: adapters, config."""

from activities.reasoners.anthropic import ANTHROPIC_VERSION, AnthropicMessagesReasoner
from activities.reasoners.config import reasoner_from_env
from activities.reasoners.http import JsonPoster, ProviderSettings
from activities.reasoners.openai import OpenAIChatReasoner

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicMessagesReasoner",
    "JsonPoster",
    "OpenAIChatReasoner",
    "ProviderSettings",
    "reasoner_from_env",
]

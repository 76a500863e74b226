"""The LLM layer: one client for any OpenAI-compatible endpoint, with record and replay.

`LLMClient` (client.py) is the only thing in the product that talks to an LLM or an embeddings
API. Its parts: `config` ([llm] TOML and flags), `profiles` (model quirks), `prices` and
`accounting` (tokens, dollars, caps), `breaker` (endpoint down), `record` (the `llm_calls` table:
record, cache, replay), `transport` (one HTTP attempt through the `openai` package), `jsonreply`
(strict parsing of JSON replies). See docs/llm.md.
"""
from .accounting import Tally, Usage
from .client import ChatReply, LLMClient
from .config import LLMConfig, load_config
from .errors import (BudgetExceeded, CallFailed, EndpointDown, LLMConfigError, LLMError, ReplayMiss, RequestRejected,
                     RunStopped)
from .record import CallStore

__all__ = [
    "LLMClient", "ChatReply", "LLMConfig", "load_config", "CallStore", "Usage", "Tally",
    "LLMError", "LLMConfigError", "RequestRejected", "CallFailed", "ReplayMiss", "RunStopped", "BudgetExceeded",
    "EndpointDown",
]

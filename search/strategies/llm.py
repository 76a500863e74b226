"""What the LLM strategies (nader, fairnad, genius) share: the one LLM client opened from their
endpoint options (declared in `catalog.LLM_OPTIONS`; recorded in the run's `runs.sqlite`,
replayable, capped by the run's `--llm-max-cost` / `--llm-max-tokens`) with its token counter
(`LLMTeam`, which each strategy's agents extend), and what a proposal whose LLM work raised
becomes."""
from __future__ import annotations

from nader.agents.llm import LLMClient, LLMError
from nader.agents.llm.errors import CallFailed, LLMConfigError, ReplayMiss, RequestRejected, RunStopped
from nader.agents.knowledge import EndpointEmbedder, KnowledgeBase, KnowledgeBaseError
from nader.agents.llm.options import NAME_OF_FIELD, config_from_options
from nader.agents.tokens import CountingClient
from nader.runtime.errors import ConfigError

from .base import StopSearch
from .catalog import LLM_OPTIONS


def proposal_failure(exc: Exception) -> str:
    """The error to record for a proposal whose LLM work raised `exc`, so that the loop goes on:
    a call that failed after its retries (the client's breaker counted it; enough in a row stop
    the run) or a reply whose handling raised (the same recorded reply fails the same way on
    resume). A stop (a cap, the endpoint down, a replay miss) and a configuration error are
    raised again."""
    if isinstance(exc, (StopSearch, RunStopped, ReplayMiss, ConfigError)):
        raise exc
    if isinstance(exc, (LLMConfigError, KnowledgeBaseError)):
        raise ConfigError(str(exc)) from None
    if isinstance(exc, (CallFailed, RequestRejected)):
        return f"the LLM call failed: {exc}"
    return f"the proposal failed: {type(exc).__name__}: {str(exc)[:500]}"


def repair_change(modification) -> dict:
    """What a candidate's `change` records of the compiler's repairs: `repair` (`--repair auto`: the
    block as the LLM wrote it, the diff, the codes fixed; `nader.search.records` shows it as
    "repaired by the compiler") and `suggested` (`suggest`: feedback turns with the proposed fix)."""
    return {**({"repair": modification.repair} if modification.repair else {}),
            **({"suggested": modification.suggested} if modification.suggested else {})}


def open_client_and_kb(settings: dict, run_dir, role: str, kb_help: str, caps: dict | None = None):
    """The LLM client (recorded in `run_dir`) and the knowledge base of a strategy that draws ideas."""
    if run_dir is None:
        raise ConfigError(f"the {role} strategy needs the run directory (bind a SearchContext with run_dir)")
    if not settings["kb"]:
        raise ConfigError(f"the {role} strategy needs a knowledge base: {kb_help}")
    client = open_llm_client(settings, run_dir, role, caps)
    try:
        # A configured embedding model embeds through the endpoint, as `nader-search kb` does.
        embedder = EndpointEmbedder(client) if client.config.embedding_model else None
        return client, KnowledgeBase.open(settings["kb"], embedder=embedder)
    except (KnowledgeBaseError, OSError) as exc:
        client.close()
        raise ConfigError(str(exc)) from None


def open_llm_client(settings: dict, run_dir, role: str, caps: dict | None = None):
    """The project's LLM client for a strategy's settings and the run's caps (`SearchContext.llm_caps`); a bad
    configuration is a ConfigError."""
    options = {name: settings[name] or None for name in LLM_OPTIONS}
    options.update({NAME_OF_FIELD[field]: value for field, value in (caps or {}).items()})
    replay = settings["replay"] or None
    try:
        config = config_from_options(**options)
        return LLMClient.from_config(config, store=run_dir, replay=replay, role=role)
    except (LLMError, OSError) as exc:
        raise ConfigError(str(exc)) from None


class LLMTeam:
    """The LLM side of one search of an LLM strategy: the one client (recorded in `run_dir`, under
    the run's caps), `counting`, which the strategy's agents call so that each proposal's tokens
    are taken off it, and, for a strategy that draws ideas (`kb_help` says how to get a knowledge
    base), the knowledge base. Strategies add their agents in a subclass."""

    def __init__(self, settings: dict, run_dir, role: str, caps: dict | None = None, kb_help: str | None = None):
        if kb_help is None:
            if run_dir is None:
                raise ConfigError(f"the {role} strategy needs the run directory (bind a SearchContext with run_dir)")
            self.client, self.kb = open_llm_client(settings, run_dir, role, caps), None
        else:
            self.client, self.kb = open_client_and_kb(settings, run_dir, role, kb_help, caps)
        self.counting = CountingClient(self.client)

    def close(self) -> None:
        if self.kb is not None:
            self.kb.close()
        self.client.close()

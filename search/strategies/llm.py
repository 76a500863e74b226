"""What the LLM strategies (nader, fairnad, genius) share: their endpoint options and the one
LLM client opened from them, recorded in the run's `runs.sqlite` (replayable)."""
from __future__ import annotations

from nader.runtime.errors import ConfigError

from .base import Option

LLM_OPTIONS = {
    "llm_config": Option(str, "", "file with the [llm] section [default: ./nader.toml]"),
    "llm_base_url": Option(str, "", "the endpoint (overrides the configuration)"),
    "llm_model": Option(str, "", "the chat model (overrides the configuration)"),
    "replay": Option(str, "", "a recorded run directory that answers every LLM call"),
}
# Where the endpoint is may change between the sessions of one run.
LLM_SESSION_OPTIONS = frozenset(LLM_OPTIONS)


def open_client_and_kb(settings: dict, run_dir, role: str, kb_help: str):
    """The LLM client (recorded in `run_dir`) and the knowledge base of a strategy that draws ideas."""
    from nader.agents.knowledge import KnowledgeBase, KnowledgeBaseError

    if run_dir is None:
        raise ConfigError(f"the {role} strategy needs the run directory (bind(run_dir))")
    if not settings["kb"]:
        raise ConfigError(f"the {role} strategy needs a knowledge base: {kb_help}")
    client = open_llm_client(settings, run_dir, role)
    try:
        return client, KnowledgeBase.open(settings["kb"])
    except (KnowledgeBaseError, OSError) as exc:
        client.close()
        raise ConfigError(str(exc)) from None


def open_llm_client(settings: dict, run_dir, role: str):
    """The project's LLM client for a strategy's settings; a bad configuration is a ConfigError."""
    from nader.agents.llm import LLMClient, LLMError
    from nader.agents.llm.options import config_from_options

    flags = {k: v for k, v in (("base_url", settings["llm_base_url"]), ("model", settings["llm_model"])) if v}
    replay = settings["replay"] or None
    try:
        config = config_from_options(config_path=settings["llm_config"] or None, replay=replay, **flags)
        return LLMClient.from_config(config, store=run_dir, replay=replay, role=role)
    except (LLMError, OSError) as exc:
        raise ConfigError(str(exc)) from None

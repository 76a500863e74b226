"""The run store: every query on the search's tables in ``RUN/runs.sqlite`` is in this package.

``base.py``    what the search asks of a storage (`BaseReader`, `BaseStore`), after Optuna's
               `BaseStorage`: the loop, strategies, readers and the API call these methods only
``sqlite.py``  the SQLite storage: the schema and `SearchStore`, the writer (holds the run's lock)
``reads.py``   the read queries, shared by the writer and the reader (`TreeReads`), and
               `lost_architectures`, which the search hands to the runtime's recovery
``reader.py``  `RunReader`: a run opened read-only (status, best, export, report, `load_study`)
``proxies.py`` `ProxyCache`: training-free proxy scores by canonical hash, in the run's database or
               a file several runs share (`--proxy-cache`)

Outside this package no module of the search writes SQL (`tests/test_storage_boundary.py`): the
other storages are the runtime's job store (`nader.runtime.store`, its tables only) with its
schema-blind SQLite tools (`integrity.py`, `recovery.py`), and the agents' own tables (the LLM
call record, the knowledge base, the experience base). A new table of the run goes here, with
its queries, as methods of the storage or a repository class beside it.
"""
from __future__ import annotations

from .base import BaseReader, BaseStore
from .proxies import ProxyCache
from .reader import RunNotFound, RunReader, index_warning
from .reads import COLUMNS, CONFIG_KEY, lost_architectures
from .sqlite import ADDED_COLUMNS, SEARCH_SCHEMA_VERSION, SearchStore

__all__ = ["ADDED_COLUMNS", "BaseReader", "BaseStore", "COLUMNS", "CONFIG_KEY", "ProxyCache", "RunNotFound",
           "RunReader", "SEARCH_SCHEMA_VERSION", "SearchStore", "index_warning", "lost_architectures"]

"""Fixtures shared by the search's tests."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def nb201_table(tmp_path_factory):
    """A NATS-Bench file over the whole NAS-Bench-201 space (tests/search/nb201_table.py; seconds to
    write, so written once per session)."""
    pytest.importorskip("nats_bench.api_utils")
    import nb201_table

    return nb201_table.write_table("nats-bench", tmp_path_factory.mktemp("nats"))

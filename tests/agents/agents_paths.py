"""Puts the LLM tests' loopback server and network guard, the knowledge base tests' hashing embedder
and the search tests' helpers on the import path (test doubles, tests only). Imported first by every
test module here (a conftest.py here would shadow tests/conftest.py)."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in ("llm", "knowledge", "search"):
    path = str(HERE.parent / folder)
    if path not in sys.path:
        sys.path.insert(0, path)

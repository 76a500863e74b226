"""The agents' tests use the LLM tests' loopback server and network guard, and the knowledge
base tests' hashing embedder (test doubles, tests only)."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in ("llm", "knowledge", "search"):
    path = str(HERE.parent / folder)
    if path not in sys.path:
        sys.path.insert(0, path)

"""NADER toolchain: the block language's compiler (`nadc`), runtime and agent loops.

The repository's top-level folders are this package's subpackages:
``dsl/`` is ``nader.dsl`` (front end and IR), ``compiler/`` is ``nader.compiler``
(passes, backends, CLI), ``runtime/``, ``agents/`` and ``grammar/`` likewise. ``nader.cli`` is
``nader-search``'s entry point, kept at the top so that it dispatches only downward.
"""

__version__ = "0.1.0"

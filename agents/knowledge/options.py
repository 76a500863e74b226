"""The knowledge base's setting, declared once (`nader.inputs.settings.Setting`): `read` and `kb`
take `--kb` (or `$NADER_KB`) this way, and `nader-search run` places it as the `nader` and
`fairnad` strategies' option `kb` (search/settings.py). Plain data: the command lines make the
click option (`nader.inputs.cli`)."""
from __future__ import annotations

from nader.inputs.settings import Path, Setting

KB = Setting("--kb", Path("dir"), "Knowledge base directory [env NADER_KB].", name="kb_path", envvar="NADER_KB",
             required=True)

"""`chainreact worker PATH...` reads folders as `serve` does (config.find_documents): a file there that does
not parse is said on stderr (as serve says it), not skipped like a package.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chainreact.cli.temporal_chains import load_documents


def test_a_file_in_a_folder_that_does_not_parse_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    (tmp_path / "bot.json").write_text(json.dumps({"id": "bot", "configuration": {"url": "http://127.0.0.1:9",
                                                                                  "model": "m"}}))
    (tmp_path / "typo.json").write_text('{"id": "typo",}')
    (tmp_path / "package.json").write_text('{"name": "not-a-document"}')
    docs = load_documents([str(tmp_path)], {}, [], None)
    assert len(docs.agents) == 1 and docs.chains == [] and docs.flows == []
    err = capsys.readouterr().err
    assert err == (f"not loaded: {tmp_path / 'typo.json'}: invalid JSON at line 1 column 15: Expecting "
                   "property name enclosed in double quotes\n")

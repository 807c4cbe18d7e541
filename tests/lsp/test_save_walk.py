"""The walk of a save through the server, following the saved document from the ``didSave`` handler
to its published diagnostics (``tests/support/walk.py`` records it): each feature module is entered
at most twice — the save, then the scheduler's analysis — and the document is resolved into a
snapshot once at the edge of each leg and once for its publication, not worked out again by each
helper. The session (``runtime/session``) is asked one question per call; the snapshot module is
entered where it resolves the document, and once more to check its version after the analysis."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from ..support import FIXTURES, ROOT
from ..support.lsp import diagnostics_for, initialized, session, until, uri_of

WALK = Path(tempfile.gettempdir()) / f"gbls-save-walk-{os.getpid()}.json"


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tests.support.walk", str(WALK)]),
)
async def walker(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[LanguageClient]:
    assert Path.cwd() == ROOT  # where ``-m tests.support.walk`` is found
    # Analysed on a save only: the save's walk is the one that runs the analysis.
    off = {"analyseOnChange": False}
    async with session(initialized(lsp_client, {"walk": tmp_path}, off, off)) as client:
        yield client


async def test_a_save_enters_each_server_module_at_most_twice(walker: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "edited.py"
    text = (FIXTURES / "lsp" / "edited.py").read_text()
    path.write_text(text)
    uri = uri_of(path)
    walker.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    await diagnostics_for(walker, uri)
    WALK.unlink(missing_ok=True)
    changed = text.replace("y = x + 1", "y = x + 2\n    print(y)")
    path.write_text(changed)
    walker.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [lsp.TextDocumentContentChangeWholeDocument(text=changed)],
        )
    )
    walker.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri=uri)))
    await until(lambda: any(d.code == "GB0059" for d in walker.diagnostics.get(uri, [])))
    await until(WALK.exists)
    walk = json.loads(WALK.read_text())
    WALK.unlink()
    # Each entry into a module: a call of its function from another module's.
    entered = Counter(module for module, _, caller in walk if caller != module)
    # The walk went where a save goes: the handler, the analyses, the session, the publication.
    assert {"lsp/server", "lsp/analyses", "runtime/session", "lsp/publishing"} <= set(entered)
    features = {m: n for m, n in entered.items() if m.startswith("lsp/") and m != "lsp/snapshot"}
    assert {module: count for module, count in features.items() if count > 2} == {}, walk
    assert [name for _, name, _ in walk].count("Documents.snapshot") == 3, walk

"""The walk of a save through the server, following the saved document from the ``didSave`` handler
to its published diagnostics (``tests/support/walk.py`` records it): each module of the server
(``gbls/lsp``, ``gbls/runtime``) is entered at most twice — the save, then the scheduler's analysis.
The document is resolved into a snapshot once at the edge of each leg and handed down (its
publication shows the one the analysis started with); the session is asked once on each leg (the
save: can the last result be moved onto the text; the analysis: the whole cycle), and the editor
watches that cycle from the outside (its progress and statuses when the worker starts and ends, the
kept result an event that publishes it).
"""

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
    # The walk went where a save goes: the handler, the snapshot, the analyses, the scheduler, the
    # session's cycle, the statuses, the publication.
    went = {"lsp/server", "lsp/snapshot", "lsp/analyses", "runtime/scheduler", "runtime/session"}
    assert went | {"lsp/status", "lsp/publishing"} <= set(entered), walk
    assert {module: count for module, count in entered.items() if count > 2} == {}, walk
    resolved = [caller for _, name, caller in walk if name == "Documents.snapshot"]
    assert resolved == ["lsp/server", "lsp/analyses"], walk  # the save's handler, the analysis's start

"""A Jupyter notebook through LSP's notebook document sync: its Python cells analysed as one
program, top to bottom, and every result on the right cell and line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from ..support import FIXTURES
from ..support.lsp import diagnostics_for, uri_of
from ..support.measured import unmeasured

NOTEBOOK = FIXTURES / "lsp" / "notebook.ipynb"
# Its cells: 1 Markdown; 2 imports and a magic; 3 the compiled `scale`, whose line 4 prints;
# 4 Markdown; 5 a shell command and the call of `scale`; 6 raises; 7 would call `scale` again.
SCALE, CALL, RAISES, NEVER = 2, 4, 5, 6  # their indexes


def cell_uri(path: Path, index: int) -> str:
    """A cell's URI as VS Code writes it: the notebook's path, the cell in the fragment."""
    return f"vscode-notebook-cell:{uri_of(path).removeprefix('file://')}#W{index}sZmlsZQ%3D%3D"


async def open_notebook(client: LanguageClient, path: Path) -> dict[str, list[lsp.Diagnostic]]:
    """Open the notebook as VS Code does; the diagnostics published for each Python cell."""
    cells, documents = [], []
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        code = cell["cell_type"] == "code"
        uri = cell_uri(path, index)
        cells.append(
            lsp.NotebookCell(lsp.NotebookCellKind.Code if code else lsp.NotebookCellKind.Markup, uri)
        )
        text = "".join(cell["source"])
        documents.append(lsp.TextDocumentItem(uri, "python" if code else "markdown", 1, text))
    python = [document.uri for document in documents if document.language_id == "python"]
    waiting = [asyncio.ensure_future(diagnostics_for(client, uri)) for uri in python]
    notebook = lsp.NotebookDocument(uri_of(path), "jupyter-notebook", 1, cells)
    client.notebook_document_did_open(lsp.DidOpenNotebookDocumentParams(notebook, documents))
    return dict(zip(python, await asyncio.gather(*waiting), strict=True))


async def close_notebook(client: LanguageClient, path: Path, cells: list[str]) -> list[list[lsp.Diagnostic]]:
    waiting = [asyncio.ensure_future(diagnostics_for(client, uri)) for uri in cells]
    client.notebook_document_did_close(
        lsp.DidCloseNotebookDocumentParams(
            lsp.NotebookDocumentIdentifier(uri_of(path)), [lsp.TextDocumentIdentifier(uri) for uri in cells]
        )
    )
    return list(await asyncio.gather(*waiting))


async def test_a_notebooks_break_is_on_its_cell_and_line(client: LanguageClient) -> None:
    published = await open_notebook(client, NOTEBOOK)
    scale = cell_uri(NOTEBOOK, SCALE)
    try:
        assert [(uri, [(d.code, d.range.start.line) for d in found]) for uri, found in published.items()] == [
            (cell_uri(NOTEBOOK, 1), []),  # the magic is no syntax error
            (scale, [("GB0059", 3)]),  # the print, on the cell's own line 4
            (cell_uri(NOTEBOOK, CALL), []),
            (cell_uri(NOTEBOOK, RAISES), [("analysis-raised", 0)]),  # the notebook stops there
            (cell_uri(NOTEBOOK, NEVER), []),
        ]
        (brk,) = published[scale]
        assert brk.range == lsp.Range(lsp.Position(3, 4), lsp.Position(3, 29))  # print("scaling", y.shape)
        (failure,) = published[cell_uri(NOTEBOOK, RAISES)]
        assert "RuntimeError: the data is missing" in failure.message

        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(scale), lsp.Position(3, 6))
        )
        assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
        assert "graph 1 · 1 op (cell 3, line 3) → **break at cell 3, line 4** → " in hover.contents.value

        lenses = await client.text_document_code_lens_async(
            lsp.CodeLensParams(lsp.TextDocumentIdentifier(scale))
        )
        # One compilation: the call in the cell after the one that raised never ran.
        assert [
            (lens.range.start.line, unmeasured(lens.command.title)) for lens in lenses or [] if lens.command
        ] == [(0, "gbls: 2 graphs · 1 break · 2 ops")]
        elsewhere = lsp.CodeLensParams(lsp.TextDocumentIdentifier(cell_uri(NOTEBOOK, CALL)))
        assert not await client.text_document_code_lens_async(elsewhere)

        actions = await client.text_document_code_action_async(
            lsp.CodeActionParams(lsp.TextDocumentIdentifier(scale), brk.range, lsp.CodeActionContext([brk]))
        )
        (remove,) = [
            a for a in actions or [] if isinstance(a, lsp.CodeAction) and a.title.startswith("Remove `print(")
        ]
        assert remove.edit is not None and remove.edit.changes is not None
        changes = {uri: list(edits) for uri, edits in remove.edit.changes.items()}
        assert changes == {scale: [lsp.TextEdit(lsp.Range(lsp.Position(3, 0), lsp.Position(4, 0)), "")]}
    finally:
        cleared = await close_notebook(client, NOTEBOOK, list(published))
    assert cleared == [[]] * len(published)


async def test_an_edited_cell_is_analysed_again(client: LanguageClient) -> None:
    published = await open_notebook(client, NOTEBOOK)
    scale = cell_uri(NOTEBOOK, SCALE)
    try:
        assert [d.code for d in published[scale]] == ["GB0059"]
        text = "@torch.compile\ndef scale(x):\n    y = x * 2\n    return y + 1"
        waiting = asyncio.ensure_future(diagnostics_for(client, scale))
        change = lsp.NotebookDocumentCellContentChanges(
            lsp.VersionedTextDocumentIdentifier(2, scale), [lsp.TextDocumentContentChangeWholeDocument(text)]
        )
        client.notebook_document_did_change(
            lsp.DidChangeNotebookDocumentParams(
                lsp.VersionedNotebookDocumentIdentifier(1, uri_of(NOTEBOOK)),  # a cell's edit keeps it
                lsp.NotebookDocumentChangeEvent(cells=lsp.NotebookDocumentCellChanges(text_content=[change])),
            )
        )
        assert await waiting == []
    finally:
        await close_notebook(client, NOTEBOOK, list(published))


MAGICS = FIXTURES / "lsp" / "magics.ipynb"
# Its cells: 1 Markdown; 2 the compiled `scale`, whose line 4 prints; 3 `%time x = torch.randn(8)`;
# 4 `y = %time scale(x)`, `%timeit` of it, a shell command's output, and a print of both.


async def test_a_timed_line_runs_as_jupyter_runs_it(client: LanguageClient) -> None:
    published = await open_notebook(client, MAGICS)
    scale = cell_uri(MAGICS, 1)
    try:
        # `x` is defined by the timed line, as in Jupyter: the next cell's call compiles `scale`, and
        # nothing fails (no NameError, no syntax error on the magics).
        assert {uri: [(d.code, d.range.start.line) for d in found] for uri, found in published.items()} == {
            scale: [("GB0059", 6)],
            cell_uri(MAGICS, 2): [],
            cell_uri(MAGICS, 3): [],
        }
        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(scale), lsp.Position(4, 5))
        )
        assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
        assert "NameError" not in hover.contents.value
    finally:
        await close_notebook(client, MAGICS, list(published))

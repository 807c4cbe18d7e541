"""Jupyter notebooks, through LSP's notebook document sync: a notebook is analysed as one program,
its Python code cells in order, as Jupyter runs them top to bottom; every range of the results is
then moved back into its cell.

IPython's own syntax is not Python; each line of it becomes what IPython runs of it, as Python. A
magic that runs its code as Python (``%time x = f()``, ``%timeit -n 3 f()``, ``y = %time f()``)
keeps that code, at its columns: the magic becomes ``if 1:`` (or spaces, after an ``=``), so that
``x`` is defined for the next cell as in Jupyter. Any other line magic, a shell command or a help
request (``%matplotlib inline``, ``!pip install``, ``obj?``) becomes ``pass``, indented as it was (a
block it was alone in stays a block); ``x = !ls`` gives ``x`` the command's output lines, none here
(gbls runs no shell command). A cell magic that runs its body as Python (``%%time``) keeps its body;
another's body is another language's (``%%bash``) and is left out. Each cell keeps its lines, so
each line of the program is one line of one cell, with the same columns: moving a range is moving
its lines.

The analysis runs the program with the notebook's path as its file, and its folder first on
``sys.path``, as Jupyter started in that folder would; ``__name__`` is ``"__main__"``, as in Jupyter,
unless ``runMain`` is off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls import uris
from pygls.workspace import Workspace

from ..worker.shared.lines import split_lines
from .actions import FIX_ALL, SHOW_LOCATION

# Every cell of a Jupyter notebook, so that a cell's number counts the Markdown cells before it, as
# the notebook shows them; only the Python code cells are analysed.
SYNC = lsp.NotebookDocumentSyncOptions(
    notebook_selector=[lsp.NotebookDocumentFilterWithNotebook(notebook="jupyter-notebook")], save=True
)
CELL_SCHEME = "vscode-notebook-cell"
PYTHON_CELL_MAGICS = {"time", "timeit", "prun", "capture"}  # they run the cell's body as Python
# The line magics that run the rest of their line as Python, and their options (IPython's
# ``parse_options`` specs: a letter with ``:`` takes a value, ``%timeit -n 10 -r 3 f(x)``); ``%time``
# takes none.
PYTHON_LINE_MAGICS = {"time": None, "timeit": "n:qr:tcp:o", "prun": "D:l:rs:T:q"}
_MAGIC = re.compile(r"\s*([%!?]|[\w.]+\s*=\s*[%!])|\s*[\w.]+\?{1,2}\s*$")
_ASSIGNED = re.compile(r"(\s*[\w.]+\s*=\s*)([%!])(.*)$")  # "x = %time f()", "files = !ls"
# A statement that cannot follow ``if 1:`` on its line.
_COMPOUND = re.compile(r"(async\s+)?(for|while|if|with|try|def|class)\b")


def python_of(cell: str) -> list[str]:
    """The cell's lines as Python, as IPython runs them (``python_line``)."""
    lines = split_lines(cell)
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        if (first[2:].split() or [""])[0] not in PYTHON_CELL_MAGICS:
            return [""] * len(lines)  # its body is another language's (%%bash), or a file's (%%writefile)
        lines[0] = ""
    return [python_line(line) for line in lines]


def python_line(line: str) -> str:
    """One line as Python: the code a magic runs as Python kept at its columns, an assigned shell
    command's output none, any other magic, shell command or help request ``pass``."""
    if not _MAGIC.match(line):
        return line
    text = line.rstrip()
    indent = line[: len(line) - len(line.lstrip())]
    assigned = _ASSIGNED.match(text)
    if assigned:
        target, escape, rest = assigned.groups()
        code = _magic_code(rest) if escape == "%" else ""
        if not code:  # IPython gives a shell command's output lines, another magic's own result
            return target + ("[]" if escape == "!" else "None")
        return target.ljust(len(text) - len(code)) + code
    code = _magic_code(text.lstrip()[1:]) if text.lstrip().startswith("%") else ""
    if not code:
        return indent + "pass"
    if _COMPOUND.match(code):  # it cannot follow ``if 1:``: the columns after the magic move left
        return indent + code
    return (indent + "if 1:").ljust(len(text) - len(code)) + code


def _magic_code(text: str) -> str:
    """The Python that the line magic ``text`` (``timeit -n 3 f(x)``, without its ``%``) runs: the
    rest of its line, after its options; "" for a magic that runs none."""
    name, _, rest = text.partition(" ")
    if name not in PYTHON_LINE_MAGICS:
        return ""
    spec = PYTHON_LINE_MAGICS[name]
    words = rest.split(" ")
    while spec is not None and words and (not words[0] or words[0].startswith("-")):
        word = words.pop(0)
        if len(word) == 2 and f"{word[1]}:" in spec and words:  # "-n 10": its value is the next word
            words.pop(0)
    return " ".join(words).strip()


@dataclass(frozen=True)
class Cell:
    uri: str  # as the client names it
    number: int  # from 1, counting every cell of the notebook
    start: int  # the program's 0-based line where it starts
    lines: int  # how many lines of the program it is


@dataclass(frozen=True)
class Program:
    """An open notebook as the program gbls analyses. It stands for the notebook where the server
    reads an open document: ``uri``, ``path``, ``version`` and ``source``."""

    uri: str
    path: str
    version: int  # how many changes the server has seen of the notebook
    source: str
    cells: tuple[Cell, ...]

    @property
    def file_uri(self) -> str:
        """The notebook's path as a ``file:`` URI, as the results name it."""
        return uris.from_fs_path(self.path) or self.path

    def cell_of(self, uri: str) -> Cell | None:
        return next((cell for cell in self.cells if unquote(cell.uri) == unquote(uri)), None)

    def cell_at(self, line: int) -> Cell | None:
        """The cell holding the program's 0-based ``line``."""
        return next((cell for cell in self.cells if cell.start <= line < cell.start + cell.lines), None)

    def cell_line(self, line: int) -> tuple[int, int] | None:
        """The program's 1-based ``line`` as (cell number, 1-based line in that cell)."""
        cell = self.cell_at(line - 1)
        return (cell.number, line - cell.start) if cell else None

    def to_cell(self, range_: lsp.Range) -> tuple[Cell, lsp.Range] | None:
        """A range of the program as its cell's: where it starts, its end kept inside that cell (a
        statement removed with its line ends at the next cell's first line)."""
        cell = self.cell_at(range_.start.line)
        if cell is None:
            return None
        end = range_.end
        if end.line >= cell.start + cell.lines:
            end = lsp.Position(cell.start + cell.lines, 0)
        return cell, lsp.Range(
            lsp.Position(range_.start.line - cell.start, range_.start.character),
            lsp.Position(end.line - cell.start, end.character),
        )

    def to_program(self, cell: Cell, position: lsp.Position) -> lsp.Position:
        return lsp.Position(position.line + cell.start, position.character)


def program(
    notebook: lsp.NotebookDocument, text_of: Callable[[str], Any], version: int, path: str
) -> Program:
    """``notebook`` as one program; ``text_of(uri)``: a cell's text document, if it is open."""
    cells: list[Cell] = []
    texts: list[str] = []
    start = 0
    for number, cell in enumerate(notebook.cells, start=1):
        document = text_of(cell.document)
        if cell.kind != lsp.NotebookCellKind.Code or document is None or document.language_id != "python":
            continue
        lines = python_of(document.source)
        cells.append(Cell(cell.document, number, start, len(lines)))
        texts += [f"{line}\n" for line in lines]
        start += len(lines)
    return Program(notebook.uri, path, version, "".join(texts), tuple(cells))


class Notebooks:
    """The open notebooks of the server's workspace, as programs (pygls keeps them, and their cells
    as text documents)."""

    def __init__(self, workspace: Callable[[], Workspace]) -> None:
        self._workspace = workspace
        # By notebook URI: how many changes the server has seen, a notebook's version as gbls counts
        # it (an edit of a cell leaves the notebook's own version as it was).
        self._changes: dict[str, int] = {}

    def program(self, uri: str) -> Program | None:
        """The open notebook at ``uri`` as a program; None if there is none."""
        workspace = self._workspace()
        notebook = workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return None
        path = uris.to_fs_path(notebook.uri) or notebook.uri
        changes = self._changes.get(notebook.uri, 0)
        return program(notebook, lambda cell: workspace.text_documents.get(unquote(cell)), changes, path)

    def cell(self, uri: str) -> tuple[Program, Cell] | None:
        """The open notebook that ``uri`` is a Python cell of, as a program, and that cell."""
        notebook = self._workspace().get_notebook_document(cell_uri=uri)
        found = self.program(notebook.uri) if notebook is not None else None
        cell = found.cell_of(uri) if found is not None else None
        return (found, cell) if found is not None and cell is not None else None

    def key_of(self, uri: str) -> str:
        """What is analysed for the document ``uri``: a cell's notebook, else the document itself."""
        found = self.cell(uri)
        return found[0].uri if found else uri

    def cell_line(self, path: str, line: int) -> tuple[int, int] | None:
        """``line`` of the open notebook at ``path`` as its cell's number and the line in that cell."""
        found = self.program(uris.from_fs_path(path) or path)
        return found.cell_line(line) if found is not None else None

    def documents(self) -> list[str]:
        """The open documents gbls analyses: text documents, and notebooks as a whole, not their cells."""
        workspace = self._workspace()
        notebooks = list(workspace.notebook_documents.values())
        cells = {unquote(cell.document) for notebook in notebooks for cell in notebook.cells}
        texts = [uri for uri in workspace.text_documents if uri not in cells]
        return texts + [notebook.uri for notebook in notebooks]

    def changed(self, uri: str) -> None:
        self._changes[uri] = self._changes.get(uri, 0) + 1

    def closed(self, uri: str) -> None:
        self._changes.pop(uri, None)


def in_cells(program: Program, diagnostics: list[lsp.Diagnostic]) -> dict[str, list[lsp.Diagnostic]]:
    """The program's diagnostics by cell, each with its ranges moved into its cell (and its related
    locations in the notebook into theirs); every Python cell is there, an empty list clears it."""
    found: dict[str, list[lsp.Diagnostic]] = {cell.uri: [] for cell in program.cells}
    for diagnostic in diagnostics:
        placed = program.to_cell(diagnostic.range)
        if placed is None:
            continue
        diagnostic.range = placed[1]
        for related in diagnostic.related_information or []:
            related.location = _location(program, related.location)
        found[placed[0].uri].append(diagnostic)
    return found


def _location(program: Program, location: lsp.Location) -> lsp.Location:
    placed = program.to_cell(location.range) if location.uri == program.file_uri else None
    return lsp.Location(placed[0].uri, placed[1]) if placed else location


def cell_edit(program: Program, edit: lsp.WorkspaceEdit) -> lsp.WorkspaceEdit:
    """``edit`` with its edits of the notebook made to its cells."""
    changes: dict[str, list[lsp.TextEdit]] = {}
    for uri, text_edits in (edit.changes or {}).items():
        for text_edit in text_edits:
            placed = program.to_cell(text_edit.range) if uri == program.file_uri else None
            target, moved = (placed[0].uri, placed[1]) if placed else (uri, text_edit.range)
            changes.setdefault(target, []).append(lsp.TextEdit(moved, text_edit.new_text))
    documents: list[Any] = []
    for change in edit.document_changes or []:
        if not isinstance(change, lsp.TextDocumentEdit) or change.text_document.uri != program.file_uri:
            documents.append(change)
            continue
        by_cell: dict[str, list[Any]] = {}
        for each in change.edits:
            placed = program.to_cell(each.range)
            if placed is not None:
                each.range = placed[1]
                by_cell.setdefault(placed[0].uri, []).append(each)
        documents += [
            lsp.TextDocumentEdit(lsp.OptionalVersionedTextDocumentIdentifier(uri, None), edits)
            for uri, edits in by_cell.items()
        ]
    return lsp.WorkspaceEdit(changes=changes or None, document_changes=documents or None)


def cell_actions(
    program: Program, cell: Cell, actions: Sequence[lsp.CodeAction | lsp.Command]
) -> list[lsp.CodeAction | lsp.Command]:
    """The code actions of the program asked for in ``cell``, their edits and locations moved into
    the cells; a fix all only with ``cell``'s edits, as the client asks each cell for its own."""
    moved: list[lsp.CodeAction | lsp.Command] = []
    for action in actions:
        if isinstance(action, lsp.CodeAction) and action.edit is not None:
            action.edit = cell_edit(program, action.edit)
            if action.kind == FIX_ALL:
                own = (action.edit.changes or {}).get(cell.uri)
                if not own:
                    continue
                action.edit = lsp.WorkspaceEdit(changes={cell.uri: own})
        if isinstance(action, lsp.Command) and action.command == SHOW_LOCATION:
            uri, range_ = action.arguments or [None, None]
            if isinstance(uri, str) and isinstance(range_, lsp.Range):
                location = _location(program, lsp.Location(uri, range_))
                action.arguments = [location.uri, location.range]
        moved.append(action)
    return moved


def cell_lenses(program: Program, cell: Cell, lenses: list[lsp.CodeLens]) -> list[lsp.CodeLens]:
    """The program's code lenses that are in ``cell``, on its lines."""
    found = []
    for lens in lenses:
        placed = program.to_cell(lens.range)
        if placed is not None and placed[0] == cell:
            lens.range = placed[1]
            found.append(lens)
    return found

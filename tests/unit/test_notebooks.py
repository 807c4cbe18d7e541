"""A notebook as one program: IPython's syntax made Python line for line, cells in order, and
ranges moved between the program and its cells."""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.workspace import TextDocument

from gbls.lsp.notebooks import Program, python_of
from gbls.lsp.notebooks import program as program_of

NOTEBOOK = "file:///work/nb.ipynb"
# A cell's kind here: its language, and whether it is code.
KINDS = {
    "code": ("python", lsp.NotebookCellKind.Code),
    "bash": ("shellscript", lsp.NotebookCellKind.Code),
    "markdown": ("markdown", lsp.NotebookCellKind.Markup),
}


def notebook(*cells: tuple[str, str]) -> Program:
    """A notebook of (kind, text) cells, its cells open as text documents, as pygls keeps them."""
    documents = {}
    nodes = []
    for index, (kind, text) in enumerate(cells):
        uri = f"vscode-notebook-cell:/work/nb.ipynb#W{index}"
        language, cell_kind = KINDS[kind]
        documents[uri] = TextDocument(uri, text, language_id=language)
        nodes.append(lsp.NotebookCell(cell_kind, uri))
    return program_of(
        lsp.NotebookDocument(NOTEBOOK, "jupyter-notebook", 1, nodes), documents.get, 0, "/work/nb.ipynb"
    )


def test_magics_and_shell_commands_are_pass_line_for_line() -> None:
    cell = "%matplotlib inline\nfiles = !ls\nfor f in files:\n    !echo {f}\ntorch.compile?\nx = 1  # 100%"
    assert python_of(cell) == ["pass", "files = []", "for f in files:", "    pass", "pass", "x = 1  # 100%"]
    # A cell magic that runs its body as Python keeps it; another's cell is left out, its lines kept.
    assert python_of("%%time\nf(x)\n") == ["", "f(x)"]
    assert python_of("%%bash\nls -l\necho done") == ["", "", ""]


def test_a_magic_that_runs_python_keeps_its_code_at_its_columns() -> None:
    # What IPython runs of each: the statement (defining `x` for the next cell), the expression's value.
    assert python_of("%time x = torch.randn(8)") == ["if 1: x = torch.randn(8)"]
    assert python_of("y = %time f(x)") == ["y =       f(x)"]
    # %timeit's and %prun's options are not code; %time has none.
    timed = python_of("for _ in r:\n    %timeit -n 10 -r 3 f(x)  ")
    assert timed == ["for _ in r:", "    if 1:              f(x)"]
    assert python_of("%prun -s cumulative f(x)") == ["if 1:               f(x)"]
    assert python_of("%time -x.sum()") == ["if 1: -x.sum()"]
    # A compound statement cannot follow `if 1:`: it moves left, the one line whose columns change.
    assert python_of("%time for i in r: f(i)") == ["for i in r: f(i)"]
    # Any other magic runs no Python of the cell's; its result is IPython's own.
    assert python_of("%time\nnames = %who_ls") == ["pass", "names = None"]


def test_the_program_is_the_python_cells_in_order() -> None:
    found = notebook(
        ("markdown", "# Title"), ("code", "import torch\n%time f()"), ("bash", "ls"), ("code", "g()\n")
    )
    assert found.source == "import torch\nif 1: f()\ng()\n"
    assert [(cell.number, cell.start, cell.lines) for cell in found.cells] == [(2, 0, 2), (4, 2, 1)]
    assert found.cell_line(3) == (4, 1)  # the program's line 3 is the first of the fourth cell
    assert found.cell_line(4) is None


def test_ranges_move_between_the_program_and_its_cells() -> None:
    found = notebook(("code", "a = 1\nb = 2"), ("code", "c = 3\nd = 4"))
    first, second = found.cells
    assert found.to_cell(lsp.Range(lsp.Position(3, 0), lsp.Position(3, 5))) == (
        second,
        lsp.Range(lsp.Position(1, 0), lsp.Position(1, 5)),
    )
    # A statement removed with its line ends at the next cell's first line: it stays in its own cell.
    assert found.to_cell(lsp.Range(lsp.Position(1, 0), lsp.Position(2, 0))) == (
        first,
        lsp.Range(lsp.Position(1, 0), lsp.Position(2, 0)),
    )
    assert found.to_program(second, lsp.Position(1, 2)) == lsp.Position(3, 2)
    assert found.cell_of("vscode-notebook-cell:/work/nb.ipynb#W1") == second

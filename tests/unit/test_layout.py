"""The shape of the code: no import cycle in gbls, the worker's boundary (the server side never
imports torch; the worker imports the standard library, torch and itself only), and the server's
parts small enough to read: no class of the language server or the runtime over 250 lines, no
function over 60, one word per idea. Modules are cut where their meaning ends, not at a line count.

Read from the sources' syntax (imports inside functions too), so that nothing is imported here.
An import under ``if TYPE_CHECKING:`` never runs: a server's features name the server's type so,
and are imported by it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from ..support import ROOT

PACKAGE = ROOT / "gbls"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _run_time(tree: ast.Module) -> list[ast.AST]:
    """The nodes of ``tree`` that can run: not those under ``if TYPE_CHECKING:``."""
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for statement in node.body
        for inner in ast.walk(statement)
    }
    return [node for node in ast.walk(tree) if id(node) not in typing_only]


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The gbls modules ``name`` imports when it runs, resolved as Python resolves them."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _run_time(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def top_level_imports(path: Path) -> set[str]:
    """The first part of each absolute import of the file: ``torch`` for ``import torch._dynamo``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_import_cycle_in_gbls() -> None:
    known = modules()
    graph = {name: imports_of(name, path, set(known)) for name, path in known.items()}
    # A package's __init__ importing nothing is no edge: only real imports count.
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for other in sorted(graph[node]):
            if state.get(other) == "open":
                cycles.append([*trail[trail.index(other) :], other])
            elif other not in state:
                visit(other, [*trail, other])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_the_server_side_imports_only_the_shared_part_of_the_worker() -> None:
    known = modules()
    server_side = {name: path for name, path in known.items() if not name.startswith("gbls.worker")}
    crossing = {
        name: sorted(
            other
            for other in imports_of(name, path, set(known))
            if other.startswith("gbls.worker.") and not other.startswith("gbls.worker.shared")
        )
        for name, path in server_side.items()
    }
    # Two run the analysis in their own process: the CLI's explicit debugging mode (``--in-process``),
    # and the pytest plugin's session, in the project's own test process.
    assert {name: found for name, found in crossing.items() if found} == {
        "gbls.cli": ["gbls.worker.debug"],
        "gbls.testing.session": ["gbls.worker.analysis.capture", "gbls.worker.supervisor.record"],
    }


def test_the_server_side_never_imports_torch() -> None:
    importing = {
        name
        for name, path in modules().items()
        if not name.startswith("gbls.worker") and "torch" in top_level_imports(path)
    }
    # The pytest plugin's checks run in the project's own test process, which has torch.
    assert importing == {"gbls.testing.checks", "gbls.testing.session"}


def test_the_worker_imports_the_standard_library_torch_and_itself_only() -> None:
    known = modules()
    # Loaded as ``_gbls_worker`` in the user's interpreter: the rest of gbls is not there.
    allowed = set(sys.stdlib_module_names) | {"torch", "_gbls_worker"}
    outside = {
        name: sorted(
            {other for other in imports_of(name, path, set(known)) if not other.startswith("gbls.worker")}
            | {top for top in top_level_imports(path) if top not in allowed}
        )
        for name, path in known.items()
        if name.startswith("gbls.worker")
    }
    # The start-up hook imports the sitecustomize it stands in for.
    assert {name: found for name, found in outside.items() if found} == {
        "gbls.worker.spawned.site.sitecustomize": ["sitecustomize"]
    }


def test_the_server_and_the_runtime_have_no_long_class_or_function() -> None:
    too_long = []
    for name, path in modules().items():
        if not name.startswith(("gbls.lsp", "gbls.runtime")):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            limit = 250 if isinstance(node, ast.ClassDef) else 60
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    too_long.append(f"{name}.{node.name}: {length} lines")
    assert too_long == []


def test_one_word_one_idea() -> None:
    """``unreached`` is one function, why no analysis reached a file; the session's analyses are
    named by their key, never by a bare string, and go through one cycle; proofs are one module's
    (the engine's verdict on a re-analysis and the editor's fixes are named for what they do)."""
    found: dict[str, list[str]] = {}
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.setdefault(node.name, []).append(name)
            if isinstance(node, ast.ClassDef) and name == "gbls.runtime.session" and node.name == "Session":
                bare = [
                    method.name
                    for method in node.body
                    if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef)
                    for argument in method.args.args
                    if argument.arg == "key" and ast.unparse(argument.annotation or ast.Constant("")) == "str"
                ]
                assert bare == []
                # One cycle for every analysis, documents' and runs' alike; ``analyse`` is the act.
                methods = {m.name for m in node.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}
                assert "analysed" in methods
                assert not methods & {"analyse", "check", "check_run", "analyse_run"}
    assert found["unreached"] == ["gbls.engine.reach"]
    assert [name for name in modules() if "proof" in name or "proving" in name] == ["gbls.runtime.proofs"]

"""Re-translate only what an edit can change.

After each analysis gbls remembers, per compiled function, the *regions* its results depend on:
its own ``def`` (or its module's ``class``) and every function Dynamo translated or inlined while
running it, each by its code key (tokens without comments). The rest of each file involved is its
*skeleton*. On the next analysis, a function whose regions and every skeleton are unchanged keeps
its results: the worker runs it eagerly, untranslated, and its breaks are moved to where its code
now is. Anything else (a new function, a changed call at module level, other settings) is
analysed again.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..worker.shared.lines import split_lines
from .cache import Key, code_key
from .model import FileReport
from .shifts import shifted_break, shifted_function, shifted_recompile, shifted_shape
from .sources import TextOf


@dataclass(frozen=True)
class Region:
    """A def or class of some file, found by qualname, with the code key of its text."""

    path: str
    qualname: str
    key: Key


@dataclass(frozen=True)
class Definition:
    qualname: str
    name: str
    first_line: int  # what its code object's co_firstlineno is: the first decorator's line
    start: int  # with the comment block above it (``# gbls: example`` lives there)
    end: int


@lru_cache(maxsize=64)
def definitions(source: str) -> tuple[Definition, ...]:
    """Every def and class of ``source`` (parsed once per text: every region of a file asks)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    lines = split_lines(source)
    found: list[Definition] = []

    def visit(body: Iterable[ast.stmt], scope: list[str]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                start = first
                while start > 1 and lines[start - 2].lstrip().startswith("#"):
                    start -= 1
                qualname = ".".join([*scope, node.name])
                found.append(Definition(qualname, node.name, first, start, node.end_lineno or node.lineno))
                inner = (
                    [*scope, node.name] if isinstance(node, ast.ClassDef) else [*scope, node.name, "<locals>"]
                )
                visit(node.body, inner)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit([n for n in getattr(node, field, []) if isinstance(n, ast.stmt)], scope)

    visit(tree.body, [])
    return tuple(found)


@lru_cache(maxsize=64)
def _region_keys(source: str) -> dict[str, Key | None]:
    """The code key of every definition of ``source``, by qualname."""
    lines = split_lines(source)
    keys: dict[str, Key | None] = {}
    for definition in definitions(source):
        found = code_key("\n".join(lines[definition.start - 1 : definition.end]) + "\n")
        keys.setdefault(definition.qualname, found[0] if found else None)
    return keys


def _region_key(source: str, qualname: str) -> Key | None:
    return _region_keys(source).get(qualname)


def skeleton(source: str, qualnames: set[str]) -> Key | None:
    """The code key of ``source`` with the named definitions blanked out."""
    lines = split_lines(source)
    for definition in definitions(source):
        if definition.qualname in qualnames:
            for index in range(definition.start - 1, definition.end):
                lines[index] = ""
    found = code_key("\n".join(lines) + "\n")
    return found[0] if found else None


@dataclass(frozen=True)
class Memory:
    """What one analysis of a file depended on, and its report."""

    report: FileReport
    settings: Any
    regions: dict[str, tuple[Region, ...]]  # by compiled function's qualname; only the reusable
    skeletons: dict[str, Key | None]  # by path, for every file involved
    sources: dict[str, str]  # by path, the texts analysed, to move the results onto the new ones


def remember(report: FileReport, source: str, settings: Any, imported: list[str], text_of: TextOf) -> Memory:
    sources = {report.path: source}

    def text(path: str) -> str:
        if path not in sources:
            sources[path] = text_of(path) or ""
        return sources[path]

    regions: dict[str, tuple[Region, ...]] = {}
    for function in report.functions:
        if not function.analysed or not function.reached:
            continue  # this torch cannot say what its results depend on
        own = [(function.path, function.qualname)]
        reached = []
        for code in function.reached:
            match = [
                d for d in definitions(text(code.path)) if d.first_line == code.line and d.name == code.name
            ]
            reached += [(code.path, d.qualname) for d in match[:1]]
        if len(reached) < len(function.reached):
            continue  # something it reached is not a plain def of a file: never reuse it
        found = []
        for path, qualname in dict.fromkeys(own + reached):
            key = _region_key(text(path), qualname)
            if key is None:
                break
            found.append(Region(path, qualname, key))
        else:
            regions[function.qualname] = tuple(found)
    tracked: dict[str, set[str]] = {}
    for group in regions.values():
        for region in group:
            tracked.setdefault(region.path, set()).add(region.qualname)
    skeletons = {
        path: skeleton(text(path), tracked.get(path, set())) for path in {report.path, *tracked, *imported}
    }
    return Memory(report, settings, regions, skeletons, sources)


def reusable(memory: Memory | None, source: str, settings: Any, text_of: TextOf) -> list[str]:
    """The compiled functions whose last results still hold for ``source``."""
    if memory is None or memory.settings != settings:
        return []

    def text(path: str) -> str:
        return source if path == memory.report.path else text_of(path) or ""

    tracked: dict[str, set[str]] = {}
    for group in memory.regions.values():
        for region in group:
            tracked.setdefault(region.path, set()).add(region.qualname)
    for path, key in memory.skeletons.items():
        if key is None or skeleton(text(path), tracked.get(path, set())) != key:
            return []
    return [
        qualname
        for qualname, group in memory.regions.items()
        if all(_region_key(text(r.path), r.qualname) == r.key for r in group)
    ]


def line_map(old: str, new: str) -> dict[int, int]:
    """Old line → new line for the lines whose code tokens are unchanged."""
    before, after = code_key(old), code_key(new)
    if before is None or after is None:
        return {}
    matcher = difflib.SequenceMatcher(None, before[0], after[0], autojunk=False)
    lines: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            lines.setdefault(before[1][block.a + offset], after[1][block.b + offset])
    return lines


def combine(fresh: FileReport, memory: Memory, reused: list[str], source: str, text_of: TextOf) -> FileReport:
    """``fresh`` (without the reused functions) and the reused functions' last results, moved."""
    maps = {
        path: line_map(old, source if path == fresh.path else text_of(path) or "")
        for path, old in memory.sources.items()
    }
    kept = set(reused)
    functions = [f for f in fresh.functions if f.qualname not in kept]
    functions += [shifted_function(f, maps) for f in memory.report.functions if f.qualname in kept]
    breaks = [
        *fresh.breaks,
        *(shifted_break(b, maps) for b in memory.report.breaks if b.function in kept),
    ]
    suppressed = [
        *fresh.suppressed,
        *(shifted_break(b, maps) for b in memory.report.suppressed if b.function in kept),
    ]
    recompiles = [
        *fresh.recompiles,
        *(shifted_recompile(r, maps) for r in memory.report.recompiles if r.function in kept),
    ]
    shapes = [
        *fresh.shapes,
        *(shifted_shape(s, maps) for s in memory.report.shapes if s.shape.function in kept),
    ]
    return dataclasses.replace(
        fresh,
        shapes=tuple(shapes),
        functions=tuple(sorted(functions, key=lambda f: f.span.line)),
        breaks=tuple(sorted(breaks, key=lambda b: (b.span.line, b.span.column, b.gb_type))),
        suppressed=tuple(suppressed),
        recompiles=tuple(sorted(recompiles, key=lambda r: (r.span.line, r.span.column, r.function))),
    )

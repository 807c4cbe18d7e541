"""Everything gbls says about an analysis, as the user reads it: ``gbls check``'s text and JSON, each
file's diagnostics (messages and related lines), hovers on every finding and compiled function, the
break report, the code lenses and the code actions' titles. Dynamo's internal names must be in
none of it: ``___stack0``, ``torch_dynamo_resume_in_step_at_10``, ``aten.nonzero.default``."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

from gbls.engine import views
from gbls.engine.fixes import policy
from gbls.engine.model import FileReport, FileView
from gbls.engine.sources import Sources, read_source
from gbls.formats import json as json_format
from gbls.formats import text as text_format
from gbls.lsp.actions import code_actions, offer
from gbls.lsp.codelens import lenses
from gbls.lsp.diagnostics import file_diagnostics
from gbls.lsp.hover import function_report, hover_markdown
from gbls.lsp.markdown import Where

# Dynamo's names for what the user wrote: a value it kept across a break or a guard's helper
# (``___stack0``, ``___check_obj_id``), a resume function, an ATen operator, its class for a value.
INTERNAL = re.compile(r"___|torch_dynamo_resume_in_|\baten\.|torch\._dynamo\.variables\.")


def said(analyses: list[FileReport], folder: str) -> Iterator[tuple[str, str]]:
    """(where it is said, what is said) for each thing gbls says about ``analyses``."""
    sources = Sources(read_source)
    found: dict[str, list[FileView]] = {}
    for analysis in analyses:
        for path, view in views.by_file(analysis).items():
            found.setdefault(path, []).append(view)
    reports: list[FileReport] = [views.combined(found[path]) for path in sorted(found)]
    fixes = policy.preferred(reports, sources, [folder])
    yield "gbls check", text_format.render(reports, fixes)
    yield from _strings("gbls check --format json", json.loads(json_format.render(reports, "", fixes)))
    by_path = {report.path: report for report in reports}
    for report in reports:
        yield from _file(views.combined(found[report.path]), sources, folder, by_path.get)


def _file(report: FileView, sources: Sources, folder: str, report_of: Any) -> Iterator[tuple[str, str]]:
    name = os.path.relpath(report.path, folder)
    source = sources.text(report.path) or ""
    where = Where(report.path, folder)

    def fix_of(brk: Any) -> tuple[str | None, str]:
        return offer(brk, report.path, sources, [folder], lambda fix, brk: (True, None))

    diagnostics = file_diagnostics(report, source, "warning", sources.lines)
    for diagnostic in diagnostics:
        yield f"{name}: diagnostic", diagnostic.message
        for related in diagnostic.related_information or []:
            yield f"{name}: related", related.message
    for action in code_actions(report.path, diagnostics, sources, report_of, [folder]):
        yield f"{name}: code action", action.title
    for lens in lenses(report, "file:///x"):
        yield f"{name}: code lens", lens.command.title if lens.command else ""
    yield f"{name}: report", function_report(report, None, where, fix_of)
    spans = [
        *(brk.span for brk in report.breaks),
        *(brk.split.span for brk in report.splits if brk.split is not None),
        *(found.span for found in report.problems),
        *(span for function in report.functions for span in function.hover_spans),
    ]
    for span in spans:
        markdown = hover_markdown(report, span.line, span.column, where, fix_of)
        yield f"{name}:{span.line}: hover", markdown or ""


def _strings(where: str, value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string of a JSON document, with its path in it."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(where, item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(where, item, f"{path}[{index}]")
    elif isinstance(value, str):
        yield f"{where}: {path}", value


def internal_names(analyses: list[FileReport], folder: str) -> list[str]:
    """What of ``said`` names Dynamo's internals: each as where, and the text around the name."""
    found = []
    for place, text in said(analyses, folder):
        for match in INTERNAL.finditer(text):
            found.append(f"{place}: ...{text[max(0, match.start() - 80) : match.end() + 60]}...")
    return found

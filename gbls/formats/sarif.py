"""The SARIF 2.1.0 output, for upload to code scanning: each finding a result, a break's chain its
related locations."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..engine.model import LIMIT_CODE, BreakReport, FileReport, Provenance, imported_from
from ..engine.ranges import Span
from ..settings import Settings
from .common import relative, severity
from .json import provenance_json
from .text import problem_text


def _tags(brk: BreakReport) -> list[str]:
    """SARIF tags: the hint classes, who can act, how the break behaves under the user's settings."""
    tags = [*brk.cause.classes, f"owner:{brk.owner}"]
    tags += [f"library:{brk.library}"] if brk.owner == "library" else []
    tags += [f"raises:{brk.cause.raises}"] if brk.cause.raises else []
    tags += ["nested"] if brk.nested else []
    return tags


def _region(span: Span) -> dict[str, int]:
    return {
        "startLine": span.line,
        "startColumn": span.column + 1,
        "endLine": span.end_line,
        "endColumn": span.end_column + 1,
    }


def _physical(path: str, span: Span) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": relative(path)}, "region": _region(span)}}


def _properties(brk: BreakReport | None, provenance: Provenance | None) -> dict[str, Any]:
    """SARIF's bag of extra facts: a break's tags, and where an imported finding came from."""
    properties: dict[str, Any] = {"tags": _tags(brk)} if brk is not None else {}
    if provenance is not None:
        properties["trace"] = provenance_json(provenance)
    return {"properties": properties} if properties else {}


# SARIF's levels have no hint: a note, as information.
LEVELS = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}


def render(reports: list[FileReport], settings: Settings, missed: dict[str, str] | None = None) -> str:
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for report in reports:
        for brk in report.breaks:
            rules.setdefault(
                brk.code,
                {
                    "id": brk.code,
                    "name": brk.gb_type,
                    "shortDescription": {"text": brk.gb_type},
                    **({"helpUri": brk.url} if brk.url else {}),
                },
            )
            results.append(
                {
                    "ruleId": brk.code,
                    "level": LEVELS[severity(brk, settings)],
                    "message": {"text": f"{brk.message}. {brk.explanation}{imported_from(brk.provenance)}"},
                    **_properties(brk, brk.provenance),
                    "locations": [_physical(report.path, brk.span)],
                    "relatedLocations": [
                        {
                            "id": index,
                            **_physical(location.path, location.span),
                            "message": {"text": location.function},
                        }
                        for index, location in enumerate(brk.chain)
                    ],
                }
            )
        for problem in report.problems:
            rule = LIMIT_CODE if problem.limit else problem.code
            rules.setdefault(
                rule,
                {
                    "id": rule,
                    "name": "recompile limit hit" if problem.limit else "recompilation",
                    "shortDescription": {
                        "text": (
                            "A function hit the recompile limit: Dynamo compiles it no more"
                            if problem.limit
                            else "A function recompiles: a guard fails between calls"
                        )
                    },
                    "helpUri": problem.url,
                },
            )
            results.append(
                {
                    "ruleId": rule,
                    "level": LEVELS[severity(problem, settings)],
                    "message": {"text": problem_text(problem)},
                    **_properties(None, problem.provenance),
                    "locations": [_physical(report.path, problem.span)],
                    "relatedLocations": (
                        [
                            {
                                "id": 0,
                                **_physical(problem.guard_at.path, problem.guard_at.span),
                                "message": {"text": f"the guard, in {problem.guard_at.function}"},
                            }
                        ]
                        if problem.guard_at
                        else []
                    ),
                }
            )
        if report.message and report.failure_span is not None:
            results.append(
                {
                    "ruleId": "analysis-failed",
                    "level": "error",
                    "message": {"text": report.message},
                    "locations": [_physical(report.path, report.failure_span)],
                }
            )
        if report.path in (missed or {}):
            results.append(
                {
                    "ruleId": "not-analysed",
                    "level": "error",
                    "message": {"text": (missed or {})[report.path]},
                    "locations": [_physical(report.path, Span(1, 0, 1, 0))],
                }
            )
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gbls",
                        "version": __version__,
                        "rules": sorted(rules.values(), key=lambda rule: rule["id"]),
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"

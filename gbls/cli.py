"""The ``gbls`` command: ``gbls check PATH…`` for CI and ``gbls serve`` for editors.

Exit codes of ``check``, as ruff's: 0 no graph break, 1 graph breaks found or a function hit the
recompile limit (with ``--diff``: a fix would change a file), 2 a file or a compile site in it
could not be analysed, or gbls itself failed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import difflib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from . import __version__, output
from .engine import baseline
from .engine.baseline import Entry
from .engine.fixes import policy
from .engine.fixes.edits import apply
from .engine.model import FileReport, failure_report
from .engine.sources import Sources, read_source, source_encoding, why_unreadable
from .runtime.errors import WorkerError
from .runtime.sandbox import not_dumpable
from .runtime.session import Session, analyse
from .settings import SANDBOX_MODES, Settings
from .worker.shared.lines import split_lines

SKIPPED_FOLDERS = {"__pycache__", "node_modules", "site-packages", "build", "dist"}
PARALLEL = max(1, min(4, os.cpu_count() or 1))


def mentions_compile(path: str) -> bool:
    """Whether the file can have a compile site: the only files with something to analyse."""
    return b"compile" in (read_source(path) or "").encode()


def python_files(paths: list[str], only_compiling: bool = False) -> Iterator[str]:
    """Named files as given (with ``only_compiling``, those that mention compile); in folders, the .py
    files that mention compile."""
    for path in paths:
        if not os.path.isdir(path):
            if not only_compiling or mentions_compile(path):
                yield os.path.abspath(path)
            continue
        for folder, subfolders, files in os.walk(path):
            subfolders[:] = sorted(
                d
                for d in subfolders
                if not d.startswith(".") and d not in SKIPPED_FOLDERS and "venv" not in d
            )
            for name in sorted(files):
                if name.endswith(".py"):
                    full = os.path.abspath(os.path.join(folder, name))
                    if mentions_compile(full):
                        yield full


def _touches(report: FileReport, changed: set[str]) -> bool:
    return report.path in changed or any(loc.path in changed for b in report.breaks for loc in b.chain)


def diff(path: str, old: str, new: str) -> str:
    name = output.relative(path)
    lines = difflib.unified_diff(
        split_lines(old, keepends=True), split_lines(new, keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(lines)


@dataclass(frozen=True)
class Reporting:
    """How ``gbls check`` reports what it found."""

    format: str = "text"
    baseline: str = ""  # a baseline file: only what it does not hold fails
    entries: tuple[Entry, ...] = ()  # what it holds, read before anything is analysed
    update_baseline: bool = False  # write what was found into the baseline first
    sarif_file: str = ""  # the report as SARIF in this file too, from the same analysis


async def check(
    files: list[str], settings: Settings, reporting: Reporting, fix: bool = False, show_diff: bool = False
) -> int:
    if not files:  # nothing to run (pre-commit's files none of which compiles): no worker to start
        return print_reports([], "", {}, reporting)
    workspace = os.getcwd()
    session = Session(settings, [workspace, *sorted({os.path.dirname(path) for path in files})], read_source)
    try:
        info = await session.warm()
    except WorkerError as error:
        print(f"gbls: {error}", file=sys.stderr)
        return 2
    if session.worker.note:
        print(f"gbls: {session.worker.note}", file=sys.stderr)
    limit = asyncio.Semaphore(PARALLEL)

    async def one(path: str) -> FileReport:
        source = read_source(path)
        if source is None:
            return failure_report(path, "io", f"cannot read the file: {why_unreadable(path)}")
        async with limit:
            return await session.check(path, source)

    try:
        reports = list(await asyncio.gather(*(one(path) for path in files)))
        sources = Sources(read_source)
        fixes = policy.preferred(reports, sources, session.folders)
        if fix or show_diff:
            edits, taken = policy.safe_edits(reports, fixes)
            changed = {
                path: apply(sources.text(path) or "", file_edits) for path, file_edits in edits.items()
            }
            if show_diff:
                sys.stdout.write(
                    "".join(diff(path, sources.text(path) or "", new) for path, new in changed.items())
                )
                return 2 if any(report.status != "ok" for report in reports) else int(bool(changed))
            for path, new in changed.items():
                encoding = source_encoding(path)
                if encoding is None:  # gone, or no longer the regular file it was: leave it be
                    continue
                with open(path, "w", encoding=encoding, newline="") as handle:
                    handle.write(new)
            if taken:  # say what changed, then report what is left as the translator now sees it
                said = [
                    f"Fixed {brk.code} in {output.relative(path)}:{brk.span.line}: {chosen.title}"
                    for path, brk, chosen in taken
                ]
                print("\n".join(said), file=sys.stdout if reporting.format == "text" else sys.stderr)
                # Only a file that changed, or whose breaks run through one, can have other breaks now.
                again = [index for index, report in enumerate(reports) if _touches(report, set(changed))]
                fresh = await asyncio.gather(*(one(files[index]) for index in again))
                for index, report in zip(again, fresh, strict=True):
                    reports[index] = report
                sources = Sources(read_source)
                fixes = policy.preferred(reports, sources, session.folders)
    finally:
        await session.stop()
    return print_reports(reports, info.torch, fixes, reporting)


def against_baseline(reports: list[FileReport], reporting: Reporting) -> baseline.Applied:
    """``reports`` without what the baseline holds, the baseline updated first if asked."""
    path = os.path.abspath(reporting.baseline)
    entries = list(reporting.entries)
    if reporting.update_baseline:
        entries = baseline.updated(entries, reports, path, read_source)
        baseline.dump(path, entries)
        print(f"gbls: wrote {len(entries)} entries to {output.relative(path)}", file=sys.stderr)
    return baseline.apply(reports, entries, path, read_source)


def print_reports(reports: list[FileReport], torch: str, fixes: policy.Fixes, reporting: Reporting) -> int:
    """Print the reports as ``reporting`` says; the exit status."""
    for note in dict.fromkeys(note for report in reports for note in report.notes):
        print(f"gbls: {note}", file=sys.stderr)
    baselined = None
    if reporting.baseline:
        baselined = against_baseline(reports, reporting)
        reports = baselined.reports
        if baselined.removable and reporting.format not in ("text", "json"):
            print(output.removable(baselined.path, baselined.removable), file=sys.stderr)
    if reporting.format == "json":
        sys.stdout.write(output.to_json(reports, torch, fixes, baselined))
    elif reporting.format == "sarif":
        sys.stdout.write(output.sarif(reports))
    elif reporting.format == "github":
        sys.stdout.write(output.github(reports))
    else:
        sys.stdout.write(output.text(reports, fixes, baselined))
    if reporting.sarif_file:
        with open(reporting.sarif_file, "w", encoding="utf-8") as handle:
            handle.write(output.sarif(reports))
    if any(report.status != "ok" for report in reports) or output.unanalysed(reports):
        return 2  # CI never stays green on code gbls did not run
    limit_hit = any(problem.limit is not None for report in reports for problem in report.problems)
    return 1 if limit_hit or any(report.breaks for report in reports) else 0


async def check_in_process(files: list[str], settings: Settings, reporting: Reporting) -> int:
    """``gbls check --in-process``: each analysis in this process, one after the other, its events on
    stderr, so that a debugger stops in the capture code. For debugging gbls, not for CI: no sandbox,
    no limits, and the analysed code can change this process."""
    from .worker import debug  # noqa: TID251 - the explicit debugging mode analyses here, with torch

    reports = []
    for path in files:
        source = read_source(path)
        if source is None:
            reports.append(failure_report(path, "io", f"cannot read the file: {why_unreadable(path)}"))
            continue
        found = await analyse(debug.InProcess(), path, source, settings, os.path.dirname(path), read_source)
        reports.append(found)
    fixes = policy.preferred(reports, Sources(read_source), [os.getcwd()])
    return print_reports(reports, debug.torch_version(), fixes, reporting)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gbls", description="Graph breaks of torch.compile, found by Dynamo itself."
    )
    parser.add_argument("--version", action="version", version=f"gbls {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    check_parser = commands.add_parser("check", help="analyse files or folders and report graph breaks")
    check_parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files and folders (default: the current folder, as ruff)"
    )
    check_parser.add_argument("--python", default="", help="interpreter with the torch to analyse with")
    check_parser.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    check_parser.add_argument(
        "--sarif-file", default="", metavar="FILE", help="also write the report as SARIF to FILE"
    )
    check_parser.add_argument(
        "--only-compiling",
        action="store_true",
        help="named files too only if they mention `compile`, as in folders (for pre-commit)",
    )
    check_parser.add_argument(
        "--baseline", default="", metavar="FILE", help="fail only on what the baseline FILE does not hold"
    )
    check_parser.add_argument(
        "--update-baseline", action="store_true", help="write what is found into the --baseline FILE first"
    )
    check_parser.add_argument("--timeout", type=float, default=Settings.timeout, help="seconds per file")
    check_parser.add_argument("--memory-mb", type=int, default=Settings.memory_mb, help="memory per analysis")
    check_parser.add_argument(
        "--run-main",
        action=argparse.BooleanOptionalAction,
        default=Settings.run_main,
        help="run the `__main__` block, as `python file.py` does (default: on)",
    )
    check_parser.add_argument("--sandbox", choices=SANDBOX_MODES, default="auto")
    fixing = check_parser.add_mutually_exclusive_group()
    fixing.add_argument(
        "--in-process",
        action="store_true",
        help="debug gbls: analyse in this process (no fork, no sandbox), printing the events",
    )
    fixing.add_argument("--fix", action="store_true", help="apply the safe fixes, then report what is left")
    fixing.add_argument(
        "--diff", action="store_true", help="print the safe fixes as a diff instead of applying them"
    )

    commands.add_parser("serve", help="run the language server over stdio")
    return parser


def read_baseline(path: str, update: bool) -> tuple[Entry, ...]:
    """The entries of the baseline ``path``; none for a baseline about to be written."""
    if update and not path:
        raise baseline.BaselineError("--update-baseline needs the baseline file: --baseline FILE")
    if not path or (update and not os.path.exists(path)):
        return ()
    return tuple(baseline.load(path))


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.command == "serve":
        from .lsp.server import serve

        serve()
        return 0
    not_dumpable()
    settings = dataclasses.replace(
        Settings(),
        interpreter=arguments.python,
        timeout=arguments.timeout,
        memory_mb=arguments.memory_mb,
        run_main=arguments.run_main,
        sandbox=arguments.sandbox,
    )
    try:
        entries = read_baseline(arguments.baseline, arguments.update_baseline)
    except baseline.BaselineError as error:
        print(f"gbls: {error}", file=sys.stderr)
        return 2
    reporting = Reporting(
        arguments.format, arguments.baseline, entries, arguments.update_baseline, arguments.sarif_file
    )
    files = list(python_files(arguments.paths or ["."], arguments.only_compiling))
    if arguments.in_process:
        return asyncio.run(check_in_process(files, settings, reporting))
    return asyncio.run(check(files, settings, reporting, arguments.fix, arguments.diff))


if __name__ == "__main__":
    sys.exit(main())

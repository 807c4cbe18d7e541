"""The ``gbls`` command: ``gbls check PATH…`` and ``gbls run SCRIPT ARGS…`` for CI, ``gbls import
TRACE…`` for what a real run recorded, ``gbls serve`` for editors.

Exit codes of ``check``, as ruff's: 0 no graph break, 1 graph breaks found or a function hit the
recompile limit (with ``--diff``: a fix would change a file), 2 a file or a compile site in it
could not be analysed, or gbls itself failed.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import __version__, doctor, flags
from .engine import baseline, reach, runs, views
from .engine.baseline import Entry
from .engine.fixes import policy
from .engine.fixes.edits import apply
from .engine.model import FileReport, FileView, failure_report
from .engine.sources import Sources, python_files, read_source, source_encoding, why_unreadable
from .engine.store import FOLDER
from .formats import common, text
from .reaching import Reaching
from .runtime.errors import WorkerError
from .runtime.persistent import Persistent
from .runtime.proofs import of_session, proven_fixes
from .runtime.sandbox import not_dumpable
from .runtime.session import Analysis, DocumentKey, Session, analyse, report_of
from .settings import Settings, cache_dir_from_environment, cache_off_by_environment
from .worker.shared.protocol import Run
from .worker.shared.workspace import in_workspace

if TYPE_CHECKING:  # a check answered from the cache imports neither the traces' reader nor SARIF
    from .traces.load import Imported

PARALLEL = max(1, min(4, os.cpu_count() or 1))


def mentions_compile(path: str) -> bool:
    """Whether the file can have a compile site: the only files with something to analyse."""
    return b"compile" in (read_source(path) or "").encode()


def checked_files(paths: list[str], only_compiling: bool = False) -> Iterator[str]:
    """Named files as given (with ``only_compiling``, those that mention compile); in folders, the .py
    files that mention compile."""
    for path in paths:
        if not os.path.isdir(path):
            if not only_compiling or mentions_compile(path):
                yield os.path.abspath(path)
            continue
        for found in python_files([path]):
            full = os.path.abspath(found)
            if mentions_compile(full):
                yield full


def folder_scripts(paths: list[str]) -> list[str]:
    """In the folders among ``paths``, the scripts that import a file of theirs that compiles without
    saying "compile" themselves (a training script calling a library's compiled method): run to
    reach it, as a file's importers are."""
    found: set[str] = set()
    for folder in filter(os.path.isdir, paths):
        compiling = list(checked_files([folder]))
        found |= {
            script
            for scripts in reach.importers(compiling, os.path.abspath(folder), read_source).values()
            for script in scripts
        }
        found -= set(compiling)
    return sorted(found)


def _touches(report: FileReport, changed: set[str]) -> bool:
    return bool(
        changed & ({report.path, *report.executed} | {loc.path for b in report.breaks for loc in b.chain})
    )


def files_of(analyses: list[FileReport], named: list[str]) -> list[FileReport]:
    """What the analyses say of each file, one report per file: the named files first, in order, then
    every other file they reached, by path."""
    found: dict[str, list[FileView]] = {}
    for analysis in analyses:
        for path, view in views.by_file(analysis).items():
            found.setdefault(path, []).append(view)
    order = [*named, *sorted(set(found) - set(named))]
    return [views.combined(found[path]) for path in order if path in found]


def diff(path: str, old: str, new: str) -> str:
    import difflib

    from .worker.shared.lines import split_lines

    name = common.relative(path)
    lines = difflib.unified_diff(
        split_lines(old, keepends=True), split_lines(new, keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(lines)


@dataclass(frozen=True)
class Reporting:
    """How ``gbls check`` and ``gbls run`` report what they found."""

    format: str = "text"
    baseline: str = ""  # a baseline file: only what it does not hold fails
    entries: tuple[Entry, ...] = ()  # what it holds, read before anything is analysed
    update_baseline: bool = False  # write what was found into the baseline first
    sarif_file: str = ""  # the report as SARIF in this file too, from the same analysis
    statistics: bool = False  # what each compiled function cost to compile, after the findings


async def check(
    files: list[str],
    settings: Settings,
    reporting: Reporting,
    fix: bool = False,
    show_diff: bool = False,
    runs: tuple[Run, ...] = (),
    cache_dir: str | None = None,
    unsafe_fixes: bool = False,
    scripts: list[str] | None = None,
) -> int:
    """Analyse ``files`` and the project ``runs``; print what each file holds. ``cache_dir``: the
    persistent cache's folder (None: no cache). ``fix``/``show_diff`` apply (or print) each break's
    first fix that re-analysis proves: a safe one, or any with ``unsafe_fixes``. ``scripts``: the
    scripts of the folders checked that reach their compiled code (``folder_scripts``)."""
    workspace = os.getcwd()
    reaching = Reaching.of(files, workspace, scripts)
    named, files = reaching.named, reaching.files
    if not files and not runs:  # nothing to run (pre-commit's files none of which compiles): no worker
        return print_reports([], "", {}, reporting, settings)
    # A file or run outside the working directory is a workspace of its own; inside, the working
    # directory is the project (a script's own package beside it, in a folder above it).
    outside = {os.path.dirname(path) for path in files} | {run.cwd for run in runs}
    folders = [workspace, *sorted(f for f in outside if not in_workspace(f, [workspace]))]
    say = lambda note: print(f"gbls: {note}", file=sys.stderr)  # noqa: E731
    store = Persistent(cache_dir, say) if cache_dir is not None else None
    session = Session(settings, folders, read_source, store, cwd=workspace)
    # What the cache holds first: when it holds everything, no worker starts.
    stored = await asyncio.gather(
        *(_stored(session, files, runs, index) for index in range(len(files) + len(runs)))
    )
    cached = {index: report for index, report in enumerate(stored) if report is not None}
    torch = session.torch
    if len(cached) < len(stored):
        try:
            torch = (await session.workers.warm()).torch
        except WorkerError as error:
            print(f"gbls: {error}", file=sys.stderr)
            return 2
        if session.workers.worker.note:
            print(f"gbls: {session.workers.worker.note}", file=sys.stderr)
    if cached and cache_dir is not None:
        note = f"{len(cached)} of {len(stored)} analyses from the cache in {common.relative(cache_dir)}"
        print(f"gbls: {note}", file=sys.stderr)
    limit = asyncio.Semaphore(PARALLEL)

    async def one(index: int) -> FileReport:
        if index in cached:
            return cached.pop(index)
        if index >= len(files):
            async with limit:
                return await report_of(session, Analysis.of_run(runs[index - len(files)], read_source))
        path = files[index]
        source = read_source(path)
        if source is None:
            return failure_report(path, "io", f"cannot read the file: {why_unreadable(path)}")
        async with limit:
            return await report_of(session, Analysis(DocumentKey(path), path, source))

    try:
        analyses = list(await asyncio.gather(*(one(index) for index in range(len(files) + len(runs)))))
        if not runs:
            analyses += await reaching.by_importers(session, files_of(analyses, files))
        tested = await reaching.by_tests(session, files_of(analyses, files)) if not runs else None
        if tested is not None:
            runs, analyses = (tested[0],), [*analyses, tested[1]]
        reports = files_of(analyses, files)
        # A code ignored is neither reported nor fixed.
        fixable = [common.ignoring(report, settings) for report in reports]
        sources = Sources(read_source)
        proofs = of_session(session)
        # What is marked fixable is what --fix applies: the fixes re-analysis proves, never others.
        fixes = policy.preferred(fixable, sources, session.folders)
        applied, _ = await proven_fixes(proofs, fixable, sources, session.folders, unsafe_fixes)
        if fix or show_diff:
            edits, taken = policy.safe_edits(fixable, applied)
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
                    f"Fixed {brk.code} in {common.relative(path)}:{brk.span.line}: {chosen.title}"
                    for path, brk, chosen in taken
                ]
                print("\n".join(said), file=sys.stdout if reporting.format == "text" else sys.stderr)
                # Only an analysis that executed a changed file, or whose breaks run through one, can
                # have other breaks now.
                again = [index for index, found in enumerate(analyses) if _touches(found, set(changed))]
                fresh = await asyncio.gather(*(one(index) for index in again))
                for index, found in zip(again, fresh, strict=True):
                    analyses[index] = found
                reports = files_of(analyses, files)
                fixable = [common.ignoring(report, settings) for report in reports]
                sources = Sources(read_source)
                fixes = policy.preferred(fixable, sources, session.folders)
                applied, _ = await proven_fixes(proofs, fixable, sources, session.folders, unsafe_fixes)
    finally:
        await session.stop()
    ran = [(run, analyses[len(files) + index]) for index, run in enumerate(runs)]
    why = functools.partial(reaching.why, [*analyses, *(found for _, found in ran)])
    reports = [common.findings_only(r) if r.path in reaching.helpers else r for r in reports]
    return print_reports(
        reports, torch, fixes, reporting, settings, ran, named=named, why=why, applied=applied
    )


async def _stored(
    session: Session, files: list[str], started: tuple[Run, ...], index: int
) -> FileReport | None:
    """The persistent cache's report of the file or run ``index``, if it holds one that still holds."""
    if index >= len(files):
        run = started[index - len(files)]
        return await session.stored(runs.entry_of(run), run)
    return await session.stored(files[index])


def against_baseline(reports: list[FileReport], reporting: Reporting) -> baseline.Applied:
    """``reports`` without what the baseline holds, the baseline updated first if asked."""
    path = os.path.abspath(reporting.baseline)
    entries = list(reporting.entries)
    if reporting.update_baseline:
        entries = baseline.updated(entries, reports, path, read_source)
        baseline.dump(path, entries)
        print(f"gbls: wrote {len(entries)} entries to {common.relative(path)}", file=sys.stderr)
    return baseline.apply(reports, entries, path, read_source)


def print_reports(
    reports: list[FileReport],
    torch: str,
    fixes: policy.Fixes,
    reporting: Reporting,
    settings: Settings,
    runs: common.Ran | None = None,
    named: list[str] | None = None,
    traces: list[Imported] | None = None,
    why: Callable[[str], str] = lambda _: reach.NOTHING_REACHES,
    applied: policy.Fixes | None = None,
) -> int:
    """Print the reports as ``reporting`` says, without the codes ``settings`` ignores and at the
    severities it gives; the exit status. ``fixes``: each break's preferred fix, shown; ``applied``:
    those re-analysis proved, which ``--fix`` applies (``policy.applied``; none unless proven).
    ``runs``: each project run and its analysis; ``named``: the files given, each of which must have
    been analysed; ``traces``: the traces imported; ``why``: why a named file no analysis ran code of
    is not analysed."""
    applied = applied or {}
    from .formats import github, json, sarif, statistics

    runs = runs or []
    for note in dict.fromkeys(note for report in reports for note in report.notes):
        print(f"gbls: {note}", file=sys.stderr)
    unreached = common.not_translated(reports, named or [], why)
    analysed = reports  # before the codes ignored and the baseline are left out
    reports = [common.ignoring(report, settings) for report in reports]
    baselined = None
    if reporting.baseline:
        baselined = against_baseline(reports, reporting)
        reports = baselined.reports
        if baselined.removable and reporting.format not in ("text", "json"):
            print(text.removable(baselined.path, baselined.removable), file=sys.stderr)
    if reporting.format == "json":
        sys.stdout.write(json.render(reports, torch, fixes, applied, baselined, runs, unreached, traces))
    elif reporting.format == "sarif":
        sys.stdout.write(sarif.render(reports, settings, unreached))
    elif reporting.format == "github":
        sys.stdout.write(github.render(reports, settings, unreached))
    else:
        sys.stdout.write(text.render(reports, applied, baselined, runs, unreached, analysed, settings.ignore))
    if reporting.statistics:  # on stderr when stdout is for a machine
        table = statistics.render(reports)
        (sys.stdout if reporting.format == "text" else sys.stderr).write(table)
    if reporting.sarif_file:
        with open(reporting.sarif_file, "w", encoding="utf-8") as handle:
            handle.write(sarif.render(reports, settings, unreached))
    failed = any(report.status != "ok" for report in reports) or any(r.status != "ok" for _, r in runs)
    if failed or common.unanalysed_count(reports) or unreached:
        return 2  # CI never stays green on code gbls did not run
    limit_hit = any(problem.limit is not None for report in reports for problem in report.problems)
    return 1 if limit_hit or any(report.breaks for report in reports) else 0


async def check_in_process(files: list[str], settings: Settings, reporting: Reporting) -> int:
    """``gbls check --in-process``: each analysis in this process, one after the other, its events on
    stderr, so that a debugger stops in the capture code. For debugging gbls, not for CI: no sandbox,
    no limits, and the analysed code can change this process."""
    from .worker import debug  # noqa: TID251 - the explicit debugging mode analyses here, with torch

    analyses = []
    for path in files:
        source = read_source(path)
        if source is None:
            analyses.append(failure_report(path, "io", f"cannot read the file: {why_unreadable(path)}"))
            continue
        found = await analyse(
            debug.InProcess(), path, source, settings, os.path.dirname(path), read_source, cwd=os.getcwd()
        )
        analyses.append(found)
    reports = files_of(analyses, files)
    fixes = policy.preferred(reports, Sources(read_source), [os.getcwd()])
    return print_reports(reports, debug.torch_version(), fixes, reporting, settings, named=files)


def import_traces(paths: list[str], fmt: str, settings: Settings, statistics: bool = False) -> int:
    """``gbls import``: what real runs' traces and logs say, placed on the workspace's source (the
    current folder) as ``gbls check`` places an analysis; exit status as check's, and 2 when part of
    a trace could not be read."""
    from .traces.load import load
    from .traces.report import reports as trace_reports

    workspace = [os.getcwd()]
    imported = [load(path, workspace, read_source) for path in paths]
    found: dict[str, list[FileView]] = {}
    for trace in imported:
        for view in trace_reports(trace, read_source, workspace):
            found.setdefault(view.path, []).append(view)
    reports: list[FileReport] = [views.combined(found[path]) for path in sorted(found)]
    said = {note for report in reports for note in report.notes}  # print_reports says those
    for trace in imported:
        for line in [*trace.problems, *(note for note in trace.notes if note not in said)]:
            print(f"gbls: {line}", file=sys.stderr)
        if not trace.processes and not trace.problems:
            print(f"gbls: {trace.source}: no compilation recorded", file=sys.stderr)
    fixes = policy.preferred(reports, Sources(read_source), workspace)
    torch = next((trace.torch for trace in imported if trace.torch), "")
    status = print_reports(
        reports, torch, fixes, Reporting(format=fmt, statistics=statistics), settings, traces=imported
    )
    return max(status, 2 if any(trace.problems for trace in imported) else 0)


def _analysis_options(parser: argparse.ArgumentParser) -> None:
    """The options of every command that analyses, and reports, but the settings (``flags``)."""
    parser.add_argument(
        "--cache-dir",
        default="",
        metavar="DIR",
        help=f"where to keep analyses for reuse (default: $GBLS_CACHE_DIR, else ./{FOLDER})",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="analyse everything again, and keep nothing (also: GBLS_NO_CACHE=1)",
    )
    parser.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    parser.add_argument(
        "--sarif-file", default="", metavar="FILE", help="also write the report as SARIF to FILE"
    )
    parser.add_argument(
        "--baseline", default="", metavar="FILE", help="fail only on what the baseline FILE does not hold"
    )
    parser.add_argument(
        "--update-baseline", action="store_true", help="write what is found into the --baseline FILE first"
    )
    _statistics_option(parser)


def _statistics_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--statistics",
        action="store_true",
        help="after the findings, what each compiled function cost to compile (on stderr for json, "
        "sarif and github)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gbls", description="Graph breaks of torch.compile, found by Dynamo itself."
    )
    parser.add_argument("--version", action="version", version=f"gbls {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    check_parser = commands.add_parser(
        "check",
        help="analyse files or folders and report graph breaks; with no PATH, the runs pyproject.toml "
        "configures ([[tool.gbls.run]]), else the current folder",
    )
    check_parser.add_argument("paths", nargs="*", metavar="PATH")
    _analysis_options(check_parser)
    check_parser.add_argument(
        "--only-compiling",
        action="store_true",
        help="named files too only if they mention `compile`, as in folders (for pre-commit)",
    )
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
    check_parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix or --diff: the unsafe fixes too (they change what the code does)",
    )
    flags.add(check_parser, "check")

    run_parser = commands.add_parser(
        "run",
        help="run a project as you run it (gbls run [OPTIONS] SCRIPT ARGS, or -m MODULE ARGS) and report "
        "the graph breaks of every file it reaches",
        usage="gbls run [OPTIONS] SCRIPT [ARGS...]\n       gbls run [OPTIONS] -m MODULE [ARGS...]",
    )
    _analysis_options(run_parser)
    run_parser.add_argument("--cwd", default="", help="the working directory (default: the current one)")
    run_parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="an environment variable of the run"
    )
    run_parser.add_argument("-m", dest="module", nargs=argparse.REMAINDER, help="run a module, as python -m")
    run_parser.add_argument("program", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS...]")
    flags.add(run_parser, "run")

    import_parser = commands.add_parser(
        "import",
        help="report the graph breaks and recompilations a real run recorded: a TORCH_TRACE folder or "
        "file, or a saved TORCH_LOGS=graph_breaks,recompiles log, on the current folder's source",
    )
    import_parser.add_argument("paths", nargs="+", metavar="PATH")
    import_parser.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    _statistics_option(import_parser)
    flags.add(import_parser, "import")

    doctor.options(commands.add_parser("doctor", help=doctor.HELP))
    commands.add_parser("serve", help="run the language server over stdio")
    return parser


def read_baseline(path: str, update: bool) -> tuple[Entry, ...]:
    """The entries of the baseline ``path``; none for a baseline about to be written."""
    if update and not path:
        raise baseline.BaselineError("--update-baseline needs the baseline file: --baseline FILE")
    if not path or (update and not os.path.exists(path)):
        return ()
    return tuple(baseline.load(path))


def _run_of(arguments: argparse.Namespace) -> Run | str:
    """The run ``gbls run`` describes, or what is wrong with its arguments."""
    target = arguments.module or arguments.program
    if not target or (arguments.module and arguments.program):
        return "gbls run needs a script (gbls run SCRIPT ARGS) or a module (gbls run -m MODULE ARGS)"
    env = dict(item.partition("=")[::2] for item in arguments.env)
    if any("=" not in item for item in arguments.env):
        return "--env takes NAME=VALUE"
    return runs.command_line(os.getcwd(), target[0], target[1:], bool(arguments.module), arguments.cwd, env)


def cache_folder(arguments: argparse.Namespace) -> str | None:
    """The persistent cache's folder the options and the environment name; None: no cache."""
    if arguments.no_cache or cache_off_by_environment():
        return None
    return os.path.abspath(arguments.cache_dir or cache_dir_from_environment() or FOLDER)


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.command == "serve":
        from .lsp.server import serve

        serve()
        return 0
    if arguments.command == "doctor":
        return doctor.main(arguments.python, arguments.cache_dir)
    not_dumpable()
    settings = flags.settings_of(arguments, arguments.command)
    if arguments.command == "import":
        return import_traces(arguments.paths, arguments.format, settings, arguments.statistics)
    try:
        entries = read_baseline(arguments.baseline, arguments.update_baseline)
    except baseline.BaselineError as error:
        print(f"gbls: {error}", file=sys.stderr)
        return 2
    reporting = Reporting(
        arguments.format,
        arguments.baseline,
        entries,
        arguments.update_baseline,
        arguments.sarif_file,
        arguments.statistics,
    )
    if arguments.command == "run":
        run = _run_of(arguments)
        if isinstance(run, str):
            print(f"gbls: {run}", file=sys.stderr)
            return 2
        return asyncio.run(check([], settings, reporting, runs=(run,), cache_dir=cache_folder(arguments)))
    paths: list[str] = arguments.paths
    configured: tuple[Run, ...] = ()
    if not paths:
        found = runs.from_pyproject(os.getcwd())
        for problem in found.problems:
            print(f"gbls: {problem}", file=sys.stderr)
        if found.problems:
            return 2
        configured = found.runs
        paths = [] if configured else ["."]
    files = list(checked_files(paths, arguments.only_compiling))
    if arguments.in_process:
        return asyncio.run(check_in_process(files, settings, reporting))
    return asyncio.run(
        check(
            files,
            settings,
            reporting,
            arguments.fix,
            arguments.diff,
            runs=configured,
            cache_dir=cache_folder(arguments),
            unsafe_fixes=arguments.unsafe_fixes,
            scripts=folder_scripts(paths),
        )
    )


if __name__ == "__main__":
    sys.exit(main())

"""The ``gbls`` command: ``gbls check PATH…`` and ``gbls run SCRIPT ARGS…`` for CI, ``gbls import
TRACE…`` for what a real run recorded, ``gbls serve`` for editors.

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

from . import __version__, output
from .engine import runs, views
from .engine.fixes import policy
from .engine.fixes.edits import apply
from .engine.model import FileReport, failure_report
from .engine.sources import Sources, read_source, source_encoding, why_unreadable
from .runtime.errors import WorkerError
from .runtime.sandbox import not_dumpable
from .runtime.session import Session, analyse
from .settings import SANDBOX_MODES, Settings
from .traces.load import Imported, load
from .traces.report import reports as trace_reports
from .worker.shared.lines import split_lines
from .worker.shared.protocol import Run

SKIPPED_FOLDERS = {"__pycache__", "node_modules", "site-packages", "build", "dist"}
PARALLEL = max(1, min(4, os.cpu_count() or 1))


def python_files(paths: list[str]) -> Iterator[str]:
    """Named files as given; in folders, the .py files that mention compile (the only ones with targets)."""
    for path in paths:
        if not os.path.isdir(path):
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
                    if b"compile" in (read_source(full) or "").encode():
                        yield full


def _touches(report: FileReport, changed: set[str]) -> bool:
    return bool(
        changed & ({report.path, *report.executed} | {loc.path for b in report.breaks for loc in b.chain})
    )


def files_of(analyses: list[FileReport], named: list[str]) -> list[FileReport]:
    """What the analyses say of each file, one report per file: the named files first, in order, then
    every other file they reached, by path."""
    found: dict[str, list[FileReport]] = {}
    for analysis in analyses:
        for path, view in views.by_file(analysis).items():
            found.setdefault(path, []).append(view)
    order = [*named, *sorted(set(found) - set(named))]
    return [views.combined(found[path]) for path in order if path in found]


def diff(path: str, old: str, new: str) -> str:
    name = output.relative(path)
    lines = difflib.unified_diff(
        split_lines(old, keepends=True), split_lines(new, keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(lines)


async def check(
    paths: list[str],
    settings: Settings,
    fmt: str,
    fix: bool = False,
    show_diff: bool = False,
    runs: tuple[Run, ...] = (),
) -> int:
    """Analyse the files ``paths`` name and the project ``runs``; print what each file holds."""
    files = list(python_files(paths))
    workspace = os.getcwd()
    folders = [workspace, *sorted({os.path.dirname(path) for path in files} | {run.cwd for run in runs})]
    session = Session(settings, folders, read_source)
    try:
        info = await session.warm()
    except WorkerError as error:
        print(f"gbls: {error}", file=sys.stderr)
        return 2
    if session.worker.note:
        print(f"gbls: {session.worker.note}", file=sys.stderr)
    limit = asyncio.Semaphore(PARALLEL)

    async def one(index: int) -> FileReport:
        if index >= len(files):
            async with limit:
                return await session.analyse_run(runs[index - len(files)])
        path = files[index]
        source = read_source(path)
        if source is None:
            return failure_report(path, "io", f"cannot read the file: {why_unreadable(path)}")
        async with limit:
            return await session.check(path, source)

    try:
        analyses = list(await asyncio.gather(*(one(index) for index in range(len(files) + len(runs)))))
        reports = files_of(analyses, files)
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
                print("\n".join(said), file=sys.stdout if fmt == "text" else sys.stderr)
                # Only an analysis that executed a changed file, or whose breaks run through one, can
                # have other breaks now.
                again = [index for index, found in enumerate(analyses) if _touches(found, set(changed))]
                fresh = await asyncio.gather(*(one(index) for index in again))
                for index, found in zip(again, fresh, strict=True):
                    analyses[index] = found
                reports = files_of(analyses, files)
                sources = Sources(read_source)
                fixes = policy.preferred(reports, sources, session.folders)
    finally:
        await session.stop()
    ran = [(run, analyses[len(files) + index]) for index, run in enumerate(runs)]
    return print_reports(reports, info.torch, fixes, fmt, ran, named=files)


def print_reports(
    reports: list[FileReport],
    torch: str,
    fixes: policy.Fixes,
    fmt: str,
    runs: list[tuple[Run, FileReport]] | None = None,
    named: list[str] | None = None,
    traces: list[Imported] | None = None,
) -> int:
    """Print the reports in ``fmt``; the exit status. ``runs``: each project run and its analysis;
    ``named``: the files given, each of which must have been analysed; ``traces``: the traces
    imported."""
    runs = runs or []
    for note in dict.fromkeys(note for report in reports for note in report.notes):
        print(f"gbls: {note}", file=sys.stderr)
    unreached = output.unreached(reports, named or [])
    if fmt == "json":
        sys.stdout.write(output.to_json(reports, torch, fixes, runs, unreached, traces))
    elif fmt == "sarif":
        sys.stdout.write(output.sarif(reports, unreached))
    elif fmt == "github":
        sys.stdout.write(output.github(reports, unreached))
    else:
        sys.stdout.write(output.text(reports, fixes, runs, unreached))
    failed = any(report.status != "ok" for report in reports) or any(r.status != "ok" for _, r in runs)
    if failed or output.unanalysed(reports) or unreached:
        return 2  # CI never stays green on code gbls did not run
    limit_hit = any(problem.limit is not None for report in reports for problem in report.problems)
    return 1 if limit_hit or any(report.breaks for report in reports) else 0


async def check_in_process(paths: list[str], settings: Settings, fmt: str) -> int:
    """``gbls check --in-process``: each analysis in this process, one after the other, its events on
    stderr, so that a debugger stops in the capture code. For debugging gbls, not for CI: no sandbox,
    no limits, and the analysed code can change this process."""
    from .worker import debug  # noqa: TID251 - the explicit debugging mode analyses here, with torch

    files = list(python_files(paths))
    analyses = []
    for path in files:
        source = read_source(path)
        if source is None:
            analyses.append(failure_report(path, "io", f"cannot read the file: {why_unreadable(path)}"))
            continue
        found = await analyse(debug.InProcess(), path, source, settings, os.path.dirname(path), read_source)
        analyses.append(found)
    reports = files_of(analyses, files)
    fixes = policy.preferred(reports, Sources(read_source), [os.getcwd()])
    return print_reports(reports, debug.torch_version(), fixes, fmt, named=files)


def import_traces(paths: list[str], fmt: str) -> int:
    """``gbls import``: what real runs' traces and logs say, placed on the workspace's source (the
    current folder) as ``gbls check`` places an analysis; exit status as check's, and 2 when part of
    a trace could not be read."""
    workspace = [os.getcwd()]
    imported = [load(path, workspace, read_source) for path in paths]
    found: dict[str, list[FileReport]] = {}
    for trace in imported:
        for view in trace_reports(trace, read_source, workspace):
            found.setdefault(view.path, []).append(view)
    reports = [views.combined(found[path]) for path in sorted(found)]
    said = {note for report in reports for note in report.notes}  # print_reports says those
    for trace in imported:
        for line in [*trace.problems, *(note for note in trace.notes if note not in said)]:
            print(f"gbls: {line}", file=sys.stderr)
        if not trace.processes and not trace.problems:
            print(f"gbls: {trace.source}: no compilation recorded", file=sys.stderr)
    fixes = policy.preferred(reports, Sources(read_source), workspace)
    torch = next((trace.torch for trace in imported if trace.torch), "")
    status = print_reports(reports, torch, fixes, fmt, traces=imported)
    return max(status, 2 if any(trace.problems for trace in imported) else 0)


def _analysis_options(parser: argparse.ArgumentParser) -> None:
    """The options of every command that analyses."""
    parser.add_argument("--python", default="", help="interpreter with the torch to analyse with")
    parser.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    parser.add_argument("--timeout", type=float, default=Settings.timeout, help="seconds per analysis")
    parser.add_argument("--memory-mb", type=int, default=Settings.memory_mb, help="memory per analysis")
    parser.add_argument("--sandbox", choices=SANDBOX_MODES, default="auto")


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
        "--run-main",
        action=argparse.BooleanOptionalAction,
        default=Settings.run_main,
        help="run the `__main__` block, as `python file.py` does (default: on)",
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

    import_parser = commands.add_parser(
        "import",
        help="report the graph breaks and recompilations a real run recorded: a TORCH_TRACE folder or "
        "file, or a saved TORCH_LOGS=graph_breaks,recompiles log, on the current folder's source",
    )
    import_parser.add_argument("paths", nargs="+", metavar="PATH")
    import_parser.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")

    commands.add_parser("serve", help="run the language server over stdio")
    return parser


def _run_of(arguments: argparse.Namespace) -> Run | str:
    """The run ``gbls run`` describes, or what is wrong with its arguments."""
    target = arguments.module or arguments.program
    if not target or (arguments.module and arguments.program):
        return "gbls run needs a script (gbls run SCRIPT ARGS) or a module (gbls run -m MODULE ARGS)"
    env = dict(item.partition("=")[::2] for item in arguments.env)
    if any("=" not in item for item in arguments.env):
        return "--env takes NAME=VALUE"
    return runs.command_line(os.getcwd(), target[0], target[1:], bool(arguments.module), arguments.cwd, env)


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.command == "serve":
        from .lsp.server import serve

        serve()
        return 0
    not_dumpable()
    if arguments.command == "import":
        return import_traces(arguments.paths, arguments.format)
    settings = dataclasses.replace(
        Settings(),
        interpreter=arguments.python,
        timeout=arguments.timeout,
        memory_mb=arguments.memory_mb,
        run_main=getattr(arguments, "run_main", Settings.run_main),
        sandbox=arguments.sandbox,
    )
    if arguments.command == "run":
        run = _run_of(arguments)
        if isinstance(run, str):
            print(f"gbls: {run}", file=sys.stderr)
            return 2
        return asyncio.run(check([], settings, arguments.format, runs=(run,)))
    if arguments.in_process:
        return asyncio.run(check_in_process(arguments.paths or ["."], settings, arguments.format))
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
    return asyncio.run(
        check(paths, settings, arguments.format, arguments.fix, arguments.diff, runs=configured)
    )


if __name__ == "__main__":
    sys.exit(main())

"""The ``gbls`` command: ``gbls check PATH…`` for CI and ``gbls serve`` for editors.

Exit codes of ``check``, as ruff's: 0 no graph break, 1 graph breaks found, 2 a file could not
be analysed or gbls itself failed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
from collections.abc import Iterator

from . import __version__, output
from .analysis import analyse
from .fixes import Broken, Edit, apply, fixes_for
from .report import FileReport, decode_source, failure_report
from .sandbox import launch
from .settings import SANDBOX_MODES, Settings
from .workerclient import Worker, WorkerError

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
                    with open(full, "rb") as handle:
                        if b"compile" in handle.read():
                            yield full


def apply_safe_fixes(reports: list[FileReport]) -> list[str]:
    """Apply every safe fix, once per edit, without overlaps; say what was fixed, like ``ruff --fix``."""
    texts: dict[str, str] = {}

    def text_of(path: str) -> str | None:
        if path not in texts:
            try:
                with open(path, encoding="utf-8") as handle:
                    texts[path] = handle.read()
            except (OSError, UnicodeDecodeError):
                return None
        return texts[path]

    chosen: dict[str, list[Edit]] = {}
    said: list[str] = []
    for report in reports:
        for brk in report.breaks:
            for fix in fixes_for(Broken.of(brk, report.path), text_of):
                if not fix.safe:
                    continue
                new = [e for e in fix.edits if e not in chosen.get(e.path, [])]
                if any(_overlap(e, other) for e in new for other in chosen.get(e.path, [])):
                    continue
                for edit in new:
                    chosen.setdefault(edit.path, []).append(edit)
                said.append(
                    f"Fixed {brk.code} in {output.relative(report.path)}:{brk.span.line}: {fix.title}"
                )
                break
    for path, edits in chosen.items():
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(apply(texts[path], edits))
    return said


def _overlap(one: Edit, other: Edit) -> bool:
    a, b = one.span, other.span
    return (a.line, a.column) < (b.end_line, b.end_column) and (b.line, b.column) < (a.end_line, a.end_column)


async def check(paths: list[str], settings: Settings, fmt: str, fix: bool = False) -> int:
    files = list(python_files(paths))
    workspace = os.getcwd()
    folders = [workspace, *sorted({os.path.dirname(path) for path in files})]
    worker = Worker(lambda: launch(settings.interpreter or None, folders, settings.sandbox))
    try:
        info = await worker.start()
    except (WorkerError, RuntimeError) as error:
        print(f"gbls: {error}", file=sys.stderr)
        return 2
    if worker.note:
        print(f"gbls: {worker.note}", file=sys.stderr)
    limit = asyncio.Semaphore(PARALLEL)

    async def one(path: str) -> FileReport:
        try:
            with open(path, "rb") as handle:
                source = decode_source(handle.read())
        except OSError as error:
            return failure_report(path, "io", f"cannot read the file: {error.strerror or error}")
        async with limit:
            return await analyse(worker, path, source, settings, workspace)

    try:
        reports = list(await asyncio.gather(*(one(path) for path in files)))
        if fix:
            fixed = apply_safe_fixes(reports)
            if fixed:  # say what changed, then report what is left as the translator now sees it
                print("\n".join(fixed), file=sys.stdout if fmt == "text" else sys.stderr)
                reports = list(await asyncio.gather(*(one(path) for path in files)))
    finally:
        await worker.stop()
    if fmt == "json":
        sys.stdout.write(output.to_json(reports, info.torch))
    elif fmt == "sarif":
        sys.stdout.write(output.sarif(reports))
    elif fmt == "github":
        sys.stdout.write(output.github(reports))
    else:
        sys.stdout.write(output.text(reports))
    if any(report.status != "ok" for report in reports):
        return 2
    return 1 if any(report.breaks for report in reports) else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gbls", description="Graph breaks of torch.compile, found by Dynamo itself."
    )
    parser.add_argument("--version", action="version", version=f"gbls {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    check_parser = commands.add_parser("check", help="analyse files or folders and report graph breaks")
    check_parser.add_argument("paths", nargs="+", metavar="PATH")
    check_parser.add_argument("--python", default="", help="interpreter with the torch to analyse with")
    check_parser.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    check_parser.add_argument("--timeout", type=float, default=Settings.timeout, help="seconds per file")
    check_parser.add_argument("--memory-mb", type=int, default=Settings.memory_mb, help="memory per analysis")
    check_parser.add_argument("--run-main", action="store_true", help="also run the `__main__` block")
    check_parser.add_argument("--sandbox", choices=SANDBOX_MODES, default="auto")
    check_parser.add_argument(
        "--fix", action="store_true", help="apply the safe fixes, then report what is left"
    )

    commands.add_parser("serve", help="run the language server over stdio")
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.command == "serve":
        from .server import serve

        serve()
        return 0
    settings = dataclasses.replace(
        Settings(),
        interpreter=arguments.python,
        timeout=arguments.timeout,
        memory_mb=arguments.memory_mb,
        run_main=arguments.run_main,
        sandbox=arguments.sandbox,
    )
    return asyncio.run(check(arguments.paths, settings, arguments.format, arguments.fix))


if __name__ == "__main__":
    sys.exit(main())

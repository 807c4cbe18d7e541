"""The share of breaks with a fix that removes the break and keeps the program's meaning, per gb_type:
each file analysed by the real worker, each break's fixes applied to a copy and analysed again, as
``gbls check --fix --unsafe-fixes`` and the editor prove them; a break's fix is the first proven one
that removes it (a workaround that keeps the split never counts). A fix that keeps the meaning
keeps what the program's compiled calls return, what it prints and how it ends; one that drops
output (a ``print`` removed, or left out of compiled code) says so, and is counted apart.

With ``--check``, each break's fix is then checked without gbls, as the issue's acceptance asks:
applied alone to a copy, torch's own log of it (``TORCH_LOGS=graph_breaks,dynamo``) shows fewer
breaks (and frames it would not convert at all) and no more calls of a disabled function, and the
program run eagerly (``torch.compile`` as the identity) returns, prints and exits as before.

    python scripts/fix_coverage.py                       # the fixture folders below
    python scripts/fix_coverage.py --check               # and check each fix without gbls
    python scripts/fix_coverage.py tests/fixtures/fixes  # one folder (or files)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from gbls.engine.fixes import policy
from gbls.engine.fixes.edits import Fix, apply
from gbls.engine.model import BreakKey, BreakReport
from gbls.engine.sources import Sources, read_source
from gbls.runtime.proofs import of_session, proven_fixes
from gbls.runtime.session import Analysis, DocumentKey, Session, report_of
from gbls.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
# The fixture folders of single files run as scripts (not the faults, projects, runs or traces), and
# the files built from torch's own graph-break tests.
FOLDERS = (
    "fixes",
    "hatches",
    "engine",
    "lsp",
    "nested",
    "fidelity",
    "raising",
    "library_frames",
    "torch_tests",
)
SKIP = "Skip calling `torch.compiler.disable()`d function"


def files(paths: list[str]) -> list[str]:
    found = []
    for path in paths:
        if os.path.isfile(path):
            found.append(os.path.abspath(path))
            continue
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            if name.endswith(".py") and not name.startswith("test_") and "compile" in Path(full).read_text():
                found.append(os.path.abspath(full))
    return found


def checked(path: str, fix: Fix) -> str:
    """Why ``fix`` of a break of ``path`` fails the check without gbls; "" when it holds."""
    sys.path.insert(0, str(ROOT))
    from tests.support.meaning import assert_same_meaning, eager_run
    from tests.support.torchlog import logged_script

    folder = Path(path).parent
    with tempfile.TemporaryDirectory(prefix="fix-coverage-") as copy:
        for name in os.listdir(folder):  # the siblings the file imports, and a fix may edit
            if name.endswith(".py"):
                shutil.copy(folder / name, Path(copy) / name)
        for edited in {edit.path for edit in fix.edits}:
            target = Path(copy) / Path(edited).name
            target.write_text(apply(Path(edited).read_text(), [e for e in fix.edits if e.path == edited]))
        fixed = Path(copy) / Path(path).name
        logs = (logged_script(Path(path)), logged_script(fixed))
        before, after = ([e for e in log.main if not e.suppressed] for log in logs)
        # A frame Dynamo refused whole (a compiled generator) is in its log as one it would not convert.
        refused = [len(log.refused) for log in logs]
        if len(after) + refused[1] >= len(before) + refused[0]:
            return (
                f"torch's log shows {len(after)} breaks and {refused[1]} frames it would not convert after "
                f"it, {len(before)} and {refused[0]} before"
            )
        skips = [sum(1 for e in log if SKIP in (*e.gb_types, e.text)) for log in (before, after)]
        if skips[1] > skips[0]:
            return "torch's log shows a call of a disabled function after it"
        try:
            checked_after = {old: new for old, new in fix.compiled_as if new in fix.checked_after}
            first = {old: fix.returns_first for old, _ in fix.compiled_as if fix.returns_first}
            assert_same_meaning(eager_run(Path(path)), eager_run(fixed), checked_after, first)
        except AssertionError as error:
            return f"run eagerly, the program does otherwise after it: {str(error)[:200]}"
    return ""


async def coverage(paths: list[str], check: bool) -> int:
    folders = sorted({os.path.dirname(path) for path in paths})
    session = Session(Settings(), folders, read_source)
    proofs = of_session(session)
    breaks: Counter[str] = Counter()
    keeps: Counter[str] = Counter()
    drops: Counter[str] = Counter()
    holds: Counter[str] = Counter()
    try:
        for path in paths:
            report = await report_of(session, Analysis(DocumentKey(path), path, read_source(path) or ""))
            sources = Sources(read_source)
            chosen, refused = await proven_fixes(proofs, [report], sources, session.folders, True)
            for brk in report.breaks:
                kind = f"{brk.code} {brk.gb_type}"
                breaks[kind] += 1
                where = f"{os.path.relpath(path, ROOT)}:{brk.span.line} {brk.code}"
                fix = chosen.get((report.path, brk.key))
                if fix is None:
                    print(
                        f"no fix: {where} {brk.gb_type}: {_why(brk, report.path, sources, session, refused)}"
                    )
                    continue
                (keeps if fix.changes == "" else drops)[kind] += 1
                if fix.changes:
                    print(f"drops output: {where}: {fix.title}")
                if check:
                    failed = checked(path, fix)
                    holds[kind] += not failed
                    if failed:
                        print(f"fails the check: {where}: {fix.title}: {failed}")
    finally:
        await session.stop()
    _table(breaks, keeps, drops, holds if check else None)
    total = sum(breaks.values())
    share = 100 * sum(keeps.values()) / total if total else 100.0
    print(
        f"{sum(keeps.values())} of {total} breaks in {len(paths)} files have a fix that removes the break "
        f"and keeps the program's meaning ({share:.0f}%); {sum(drops.values())} more one that drops output"
    )
    if check:
        held = sum(holds.values())
        passed = 100 * held / total if total else 100.0
        print(f"{held} of {total} breaks ({passed:.0f}%) pass the check without gbls")
    return 0


def _why(
    brk: BreakReport, path: str, sources: Sources, session: Session, refused: dict[tuple[str, BreakKey], str]
) -> str:
    offered = policy.for_break(brk, path, sources, session.folders)
    if not any(fix.removes for fix in offered):
        workarounds = [fix.title.split(":")[0] for fix in offered]
        return "no candidate" + (f" (workarounds: {'; '.join(workarounds)})" if workarounds else "")
    return refused.get((path, brk.key), "")


def _table(
    breaks: Counter[str], keeps: Counter[str], drops: Counter[str], holds: Counter[str] | None
) -> None:
    print()
    print("| break | breaks | keeps the meaning | drops output |" + (" passes the check |" if holds else ""))
    print("| --- | --- | --- | --- |" + (" --- |" if holds else ""))
    for kind, count in sorted(breaks.items(), key=lambda item: (-item[1], item[0])):
        row = f"| {kind} | {count} | {keeps[kind]} | {drops[kind]} |"
        print(row + (f" {holds[kind]} |" if holds is not None else ""))
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "tests" / "fixtures" / f) for f in FOLDERS])
    parser.add_argument("--check", action="store_true", help="check each fix without gbls, as above")
    arguments = parser.parse_args()
    return asyncio.run(coverage(files(arguments.paths), arguments.check))


if __name__ == "__main__":
    sys.exit(main())

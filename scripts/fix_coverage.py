"""The share of breaks with a proven fix: each fixture file analysed by the real worker, each break's
fixes (safe and unsafe) applied to a copy and analysed again, as ``gbls check --fix --unsafe-fixes``
and the editor prove them. Prints a line per break without one (and why), then the share.

    python scripts/fix_coverage.py                       # the fixture folders below
    python scripts/fix_coverage.py tests/fixtures/fixes  # one folder (or files)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from gbls.engine.fixes import policy
from gbls.engine.sources import Sources, read_source
from gbls.runtime.proofs import of_session, proven_fixes
from gbls.runtime.session import Session
from gbls.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
# The fixture folders of single files run as scripts (not the faults, projects, runs or traces).
FOLDERS = ("fixes", "hatches", "engine", "lsp", "nested", "fidelity", "raising", "library_frames")


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


async def coverage(paths: list[str]) -> int:
    folders = sorted({os.path.dirname(path) for path in paths})
    session = Session(Settings(), folders, read_source)
    proofs = of_session(session)
    breaks = fixed = 0
    try:
        for path in paths:
            report = await session.check(path, read_source(path) or "")
            sources = Sources(read_source)
            chosen, refused = await proven_fixes(proofs, [report], sources, session.folders, True)
            for brk in report.breaks:
                breaks += 1
                if (report.path, brk.key) in chosen:
                    fixed += 1
                    continue
                offered = policy.for_break(brk, report.path, sources, session.folders)
                why = refused.get((report.path, brk.key)) or ("no candidate" if not offered else "")
                where = f"{os.path.relpath(path, ROOT)}:{brk.span.line}"
                print(f"no proven fix: {where} {brk.code} {brk.gb_type}: {why}")
    finally:
        await session.stop()
    share = 100 * fixed / breaks if breaks else 100.0
    print(f"{fixed} of {breaks} breaks in {len(paths)} files have a proven fix ({share:.0f}%)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "tests" / "fixtures" / f) for f in FOLDERS])
    return asyncio.run(coverage(files(parser.parse_args().paths)))


if __name__ == "__main__":
    sys.exit(main())

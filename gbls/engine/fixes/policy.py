"""Which fixes gbls offers, which one it prefers, and which ``gbls check --fix`` applies: one rule
for the editor and the CLI.

A break is offered the catalogue's fixes that edit only the analysed file or files in the
workspace; a recompilation report its own fixes (they edit the analysed file). Either way the fix
that keeps the program's meaning comes first: the fixes that remove the break before the
workarounds that keep it (running code eagerly, moving the split), those that keep the program's
output before those that drop some of it, the safe ones (they keep what the code computes for
any input) first among them; each kind in the catalogue's order, the most direct first. The first
offered is the preferred one.

What is applied is one rule too (``applied``), read from the proofs' verdicts (a fix is proven when
re-analysis shows it removes its break and keeps the program's meaning): each break's first offered
fix that removes it, is safe (any, with ``--unsafe-fixes``) and is proven. It is what ``gbls check``
marks ``[*]`` and counts as fixable, what ``--fix`` and the editor's fix all apply, the editor's
preferred quick fix and the hover's "To do" (``in_order``). A workaround is never applied.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..model import BreakKey, BreakReport, FileReport, RecompileKey, RecompileReport
from ..sources import Sources
from .catalogue import fixes_for
from .edits import Edit, Fix, editable
from .recompiles import recompile_fixes

# Each break's (or recompilation report's) preferred fix, if it has one, by (analysed file, its key).
Fixes = dict[tuple[str, BreakKey | RecompileKey], Fix]
# Which fixes (of the break, a break of the analysed file given) may be offered: the editor's, those
# proven for that break.
Keep = Callable[[Fix, BreakReport, str], bool]


def _safe_first(fixes: list[Fix]) -> list[Fix]:
    # Stable: the catalogue's order otherwise.
    return sorted(fixes, key=lambda fix: (not fix.removes, fix.changes != "", not fix.safe))


def for_break(
    brk: BreakReport, analysed: str, sources: Sources, folders: list[str], keep: Keep | None = None
) -> list[Fix]:
    """The fixes offered for ``brk``, a break of the file ``analysed``, the preferred first: those
    that edit only ``analysed`` or files in the workspace ``folders`` (and that ``keep`` keeps)."""
    offered = fixes_for(brk, analysed, sources, lambda fix: editable(fix, analysed, folders))
    return _safe_first([fix for fix in offered if keep is None or keep(fix, brk, analysed)])


def for_recompile(found: RecompileReport, report: FileReport, sources: Sources) -> list[Fix]:
    """The fixes offered for ``found``, a recompilation report of ``report``, the preferred first."""
    return _safe_first(recompile_fixes(found, report, sources))


def preferred(
    reports: Sequence[FileReport], sources: Sources, folders: list[str], keep: Keep | None = None
) -> Fixes:
    """The preferred fix of each break (of those ``keep`` keeps) and each recompilation problem that
    has one."""
    found: Fixes = {}
    for report in reports:
        for brk in report.breaks:
            offered = for_break(brk, report.path, sources, folders, keep)
            if offered:
                found[(report.path, brk.key)] = offered[0]
        for problem in report.problems:
            offered = for_recompile(problem, report, sources)
            if offered:
                found[(report.path, problem.key)] = offered[0]
    return found


def applies(fix: Fix, unsafe: bool = False) -> bool:
    """Whether ``--fix`` may take ``fix`` once proven: it removes its break and is safe (or any such,
    ``unsafe``)."""
    return fix.removes and (fix.safe or unsafe)


def first_applied(
    brk: BreakReport, analysed: str, sources: Sources, folders: list[str], proven: Keep, unsafe: bool = False
) -> Fix | None:
    """The fix ``--fix`` applies for ``brk``, a break of the file ``analysed``: its first offered fix
    that ``applies`` and that ``proven`` says re-analysis proved."""
    return next(
        (
            fix
            for fix in for_break(brk, analysed, sources, folders)
            if applies(fix, unsafe) and proven(fix, brk, analysed)
        ),
        None,
    )


def applied(
    reports: Sequence[FileReport], sources: Sources, folders: list[str], proven: Keep, unsafe: bool = False
) -> Fixes:
    """Each break's fix that ``--fix`` (``--unsafe-fixes``: ``unsafe``) and fix all apply, that
    ``gbls check`` marks ``[*]``: ``first_applied``."""
    found: Fixes = {}
    for report in reports:
        for brk in report.breaks:
            fix = first_applied(brk, report.path, sources, folders, proven, unsafe)
            if fix is not None:
                found[(report.path, brk.key)] = fix
    return found


def in_order(
    brk: BreakReport, analysed: str, sources: Sources, folders: list[str], proven: Keep
) -> list[Fix]:
    """The proven fixes of ``brk``, a break of the file ``analysed``, as the editor offers them: the
    one fix all applies first (the preferred quick fix, the hover's "To do"), then the others in
    the policy's order."""
    offered = for_break(brk, analysed, sources, folders, proven)
    taken = next((fix for fix in offered if applies(fix)), None)
    return offered if taken is None else [taken, *(fix for fix in offered if fix != taken)]


def safe_edits(
    reports: Sequence[FileReport], fixes: Fixes
) -> tuple[dict[str, list[Edit]], list[tuple[str, BreakReport, Fix]]]:
    """What ``--fix`` applies of the breaks' fixes ``fixes`` (``applied``): their edits by file, each
    edit once, leaving out a fix that overlaps one taken before it; and the (analysed file, break,
    fix) of each fix taken."""
    edits: dict[str, list[Edit]] = {}
    taken: list[tuple[str, BreakReport, Fix]] = []
    for report in reports:
        for brk in report.breaks:
            fix = fixes.get((report.path, brk.key))
            if fix is None:
                continue
            new = [e for e in fix.edits if e not in edits.get(e.path, [])]
            if any(e.span.overlaps(other.span) for e in new for other in edits.get(e.path, [])):
                continue
            for edit in new:
                edits.setdefault(edit.path, []).append(edit)
            taken.append((report.path, brk, fix))
    return edits, taken

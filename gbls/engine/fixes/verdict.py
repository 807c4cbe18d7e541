"""Whether a fix is proven: what the re-analysis of the fixed text shows, beside the analysis it fixes.

A fix is proven when it proves both that it fixes and that it keeps the program's meaning:

- The break it is for is gone (each fix's ``proof`` says what "gone" is), no break appeared that the
  analysis before it did not have, and every compiled function that compiled a graph still does, or
  runs traced inline in one that does (nothing moved out of compiled code wholesale). Breaks are
  compared by what they are and where they are in the code's structure (type, compiled function,
  root cause's function): the fix moves lines, not functions.
- A fix that compiles a function's code under another name (``Fix.compiled_as``: a generator's
  calls made by a compiled function that consumes it; a function's rest, after the checks it now
  runs in Python first) is held to the same, the function read as the one that took its place: its
  breaks, whether it compiles, and the results of its calls, call by call. The function that took
  its place compiles as many graphs as it did (where it compiled none, as a generator that broke at
  its start, at least one). Where a check then reads its result in Python (``Fix.checked_after``),
  it also returns on the calls where the function raised, the check raising instead: the calls
  that returned are matched in order among its calls. Where it returns the first items of what the
  function returned (``Fix.returns_first``: Python then computes the rest, a timer's reading), each
  of its calls returns those items of the function's call.
- The program runs as before (to its end, or to the same kind of failure: a notebook's cell that
  raises), its compiled calls return what they returned (within a float's tolerance), and it
  prints what it printed, but for the lines a fix that says so drops (``outcomes``).
"""

from __future__ import annotations

from collections import Counter

from ..model import BreakReport, FailureKind, FileReport, RecompileReport
from .edits import Fix
from .outcomes import difference

# The ends of an analysis its fixes are proven against: the program ran to its end, or raised. Any
# other (cut at the end of its budget, a crash, the memory limit, the worker gone) each proof would
# meet again, at cost: a cut program shows only as much as its budget let it reach.
PROVABLE = ("", "raised")
# How a re-analysis ends that says nothing of the fix: a limit of gbls's, or gbls itself, stopped it
# (on a busy machine as much as on a wrong fix).
UNDECIDED: tuple[FailureKind, ...] = ("timeout", "cancelled", "worker")


class Undecided(Exception):
    """The re-analysis of a fixed text ended for a reason of gbls's (``UNDECIDED``): it neither proves
    nor refuses the fix, and is not kept as a verdict."""


def provable(report: FileReport) -> bool:
    """Whether the fixes of ``report``'s breaks are proven: a run's analysis is not (its script's
    text alone does not run as the run does)."""
    return (
        report.status in ("ok", "error")
        and report.failure_kind in PROVABLE
        and report.cut is None
        and not report.origin
    )


# The break a call of a ``torch.compiler.disable``'d function is: the fallback's one clean skip.
SKIP = "Skip calling `torch.compiler.disable()`d function"
# The break a call of a custom op is while its fake is the stub that raises NotImplementedError.
STUB = "NotImplementedError/UnsupportedFakeTensorException when running FX node"
Signature = tuple[str, str, str]


def signature(brk: BreakReport) -> Signature:
    return (brk.gb_type, brk.function, brk.root.function)


def _every(report: FileReport, renamed: dict[str, str] | None = None) -> Counter[Signature]:
    """Each break the analysis found, wherever it belongs and suppressed or not: a fix may add none.
    ``renamed``: the functions a fix compiles under another name, each break said as of that one."""
    found: Counter[Signature] = Counter()
    # One break may be in two of the lists; two breaks of a library may share their key (the one
    # workspace line that leads to both) but not their root cause.
    every = (*report.breaks, *report.elsewhere, *report.suppressed)
    for brk in {(b.key, b.root): b for b in every}.values():
        found[_renamed(signature(brk), renamed or {})] += 1
    return found


def _renamed(signed: Signature, renamed: dict[str, str]) -> Signature:
    gb_type, function, root = signed
    return (gb_type, renamed.get(function, function), renamed.get(root, root))


def _graphs(report: FileReport, function: str) -> int:
    return sum(len(f.graphs) for f in report.functions if f.qualname == function)


def _compiling(report: FileReport) -> set[str]:
    """The compiled functions whose code runs compiled: those that compiled a graph, and those that
    only ran traced inline in the graphs of one that did (a compiled function called by another,
    whose break kept it a frame of its own until it was fixed)."""
    own = {f.qualname for f in report.functions if f.graphs}
    return own | {f.qualname for f in report.functions if f.target.inlined in own}


def recompile_signature(found: RecompileReport) -> Signature:
    """What a recompilation report is about, across re-analyses: the function, the frame, what changed."""
    return ("recompile", found.function, f"{found.frame.name}: {found.changed}")


def recompile_disproof(fix: Fix, found: RecompileReport, before: FileReport, after: FileReport) -> str | None:
    """Why ``fix`` of ``found`` (a recompilation report of ``before``) is not proven by ``after``: the
    program must run as before with no new break, and the function recompile fewer times (or, for
    a raised limit, hit it no more); None when it is proven."""
    if (after.status, after.failure_kind) != (before.status, before.failure_kind):
        return f"the fixed program does not run as before: {after.message or after.status}"
    new = _every(after) - _every(before)
    if new:
        gb_type, function, root = sorted(new)[0]
        return f"it brings a new break: {gb_type} in {root} (compiled {function})"
    mine = [r for r in after.recompiles if r.function == found.function]
    if fix.proof == "under_limit":
        return f"{found.function} still hits the recompile limit" if any(r.limit for r in mine) else None
    was = sum(r.count for r in before.recompiles if r.function == found.function)
    now = sum(r.count for r in mine)
    return f"{found.function} recompiles as often after it ({now} times)" if now >= was else None


def disproof(fix: Fix, brk: BreakReport, before: FileReport, after: FileReport) -> str | None:
    """Why ``fix`` of ``brk`` (a break of ``before``) is not proven by ``after``, the analysis of the
    fixed text; None when it is."""
    if (after.status, after.failure_kind) != (before.status, before.failure_kind):
        return f"the fixed program does not run as before: {after.message or after.status}"
    renamed = dict(fix.compiled_as)
    was, now = _every(before, renamed), _every(after)
    new = now - was
    signed = _renamed(signature(brk), renamed)
    if fix.proof == "fewer":
        if _graphs(after, brk.function) >= _graphs(before, brk.function):
            return f"{brk.function} is in as many graphs after it"
    elif now[signed] >= was[signed]:
        return "the break is still there after it"
    emptied = sorted({renamed.get(name, name) for name in _compiling(before)} - _compiling(after))
    if emptied:
        return f"{emptied[0]} compiles no graph after it: its code no longer runs compiled"
    for old, took in fix.compiled_as:
        had, has = _graphs(before, old), _graphs(after, took)
        if has != had and not (had == 0 and has > 0):
            return f"{took} compiles {has} graphs where {old} compiled {had}"
    if fix.proof in ("skip", "stub"):
        allowed = SKIP if fix.proof == "skip" else STUB
        skips = [found for found in new if found[0] == allowed]
        if skips:
            new[skips[0]] -= 1
            new = +new
    if new:
        gb_type, function, root = sorted(new)[0]
        return f"it brings a new break: {gb_type} in {root} (compiled {function})"
    inline = frozenset(_compiling(after) - {f.qualname for f in after.functions if f.graphs})
    changed = difference(
        before.outcome,
        after.outcome,
        fix.changes,
        inline,
        renamed,
        frozenset(fix.checked_after),
        fix.returns_first,
    )
    return f"it changes what the program does: {changed}" if changed is not None else None

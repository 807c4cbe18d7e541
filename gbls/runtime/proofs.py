"""Proving fixes: each candidate applied to a copy and analysed again by the session's real worker.

A fix of the analysed file alone is proven on its fixed text (the worker analyses a buffer as
well as a file). A fix that edits its sibling modules is proven on a copy of the analysed file's
folder (its ``.py`` files, in a folder of its ``.gbls_cache`` removed after) with the edits made
there; one that edits a file elsewhere is not proven. Each verdict is worked out once for the
texts it was made on, and kept.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Sequence

from ..engine.cache import code_key
from ..engine.fixes import policy
from ..engine.fixes.edits import Fix, apply
from ..engine.fixes.verdict import (
    UNDECIDED,
    Signature,
    Undecided,
    disproof,
    provable,
    recompile_disproof,
    recompile_signature,
    signature,
)
from ..engine.model import BreakKey, BreakReport, FileReport, RecompileReport
from ..engine.sources import Sources
from ..engine.store import FOLDER, Store, code_digest, lookup
from .session import Session, analyse

Verdict = str | None  # None: proven; else why not, in words
# Analyse (path, its text, the workspace folder; "" for the path's own): the real worker's analysis.
Reanalyse = Callable[[str, str, str], Awaitable[FileReport]]


# Where a verdict is kept across sessions, for the proof of the analysis given whose inputs are
# digested in the string given: the persistent cache's store and the verdict's lookup key; None: not kept.
Keeping = Callable[[FileReport, str], Awaitable[tuple[Store, str] | None]]


def of_session(session: Session) -> Proofs:
    """Proofs by ``session``'s worker, with its settings; their verdicts kept in its persistent cache."""

    async def reanalyse(path: str, text: str, workspace: str) -> FileReport:
        folder = workspace or session.folder_of(path)
        worker, settings = session.workers.worker_for(path), session.settings_for(path)
        return await analyse(worker, path, text, settings, folder, session.text_of)

    async def keeping(before: FileReport, proof: str) -> tuple[Store, str] | None:
        persistent = session.persistent
        if persistent is None:
            return None
        path = before.path
        workspace, settings = session.folder_of(path), session.settings_for(path)

        def work() -> tuple[Store, str] | None:
            # What the analysis was made with (gbls, the interpreter, the settings), as its own key has it.
            analysis = persistent.key(settings, path, workspace, None, session.cwd or workspace)
            return (persistent.store(workspace), lookup(proof=proof, analysis=analysis)) if analysis else None

        return await asyncio.to_thread(work)

    return Proofs(reanalyse, keeping)


class Proofs:
    """The verdicts of the fixes of one session's analyses."""

    def __init__(self, reanalyse: Reanalyse, keeping: Keeping | None = None) -> None:
        self.reanalyse = reanalyse
        self.keeping = keeping
        # By the fix, the break it is for (one fix can be offered for several: a library call that
        # breaks in three places, moved out whole) and the texts it edits.
        self.verdicts: dict[tuple[Fix, Signature, str], Verdict] = {}

    def known(self, fix: Fix, brk: BreakReport, sources: Sources) -> tuple[bool, Verdict]:
        """Whether the verdict on ``fix`` of ``brk`` for the texts as ``sources`` has them is known,
        and what it is."""
        key = (fix, signature(brk), _fingerprint(fix, sources))
        return (key in self.verdicts, self.verdicts.get(key))

    def holds(self, fix: Fix, brk: BreakReport, sources: Sources) -> bool:
        """Whether ``fix`` of ``brk`` is proven on the texts as ``sources`` has them."""
        return self.known(fix, brk, sources) == (True, None)

    async def prove(self, fix: Fix, brk: BreakReport, before: FileReport, sources: Sources) -> Verdict:
        """Why ``fix`` of ``brk``, a break of the analysis ``before``, is not proven; None when it is.
        Raises ``Undecided`` when the re-analysis could not tell (the next call tries again)."""
        key = (fix, signature(brk), _fingerprint(fix, sources))
        if key not in self.verdicts:
            prove = functools.partial(self._prove, fix, brk, before, sources)
            self.verdicts[key] = await self._kept(key, before, sources, prove)
        return self.verdicts[key]

    async def _kept(
        self,
        key: tuple[Fix, Signature, str],
        before: FileReport,
        sources: Sources,
        prove: Callable[[], Awaitable[Verdict]],
    ) -> Verdict:
        """The verdict the persistent cache kept for ``key`` on these texts, else ``prove()``'s, kept."""
        # The proof's inputs: the fix, its break and the code of every file the fixed program runs,
        # as the cache keys an analysis (comments and line moves aside: a fix found at a line a
        # comment moved is the same fix).
        fix, signed, _ = key
        paths = sorted({before.path, *before.executed, *(edit.path for edit in fix.edits)})
        code = [(path, _code(sources.text(path) or "")) for path in paths]
        edits = [(edit.path, edit.text) for edit in fix.edits]
        proof = lookup(
            title=fix.title, edits=edits, proof=fix.proof, changes=fix.changes, signature=signed, code=code
        )
        kept = await self.keeping(before, proof) if self.keeping is not None else None
        if kept is not None:
            known, verdict = kept[0].verdict(kept[1])
            if known:
                return verdict
        verdict = await prove()
        if kept is not None:
            kept[0].keep_verdict(kept[1], verdict)
        return verdict

    def known_recompile(self, fix: Fix, found: RecompileReport, sources: Sources) -> tuple[bool, Verdict]:
        key = (fix, recompile_signature(found), _fingerprint(fix, sources))
        return (key in self.verdicts, self.verdicts.get(key))

    async def prove_recompile(
        self, fix: Fix, found: RecompileReport, before: FileReport, sources: Sources
    ) -> Verdict:
        """Why ``fix`` of ``found``, a recompilation report of ``before``, is not proven; None when
        it is. Raises ``Undecided`` as ``prove`` does."""
        key = (fix, recompile_signature(found), _fingerprint(fix, sources))
        if key not in self.verdicts:
            judge = functools.partial(recompile_disproof, fix, found, before)
            self.verdicts[key] = await self._judged(fix, before, sources, judge)
        return self.verdicts[key]

    async def _prove(self, fix: Fix, brk: BreakReport, before: FileReport, sources: Sources) -> Verdict:
        return await self._judged(fix, before, sources, functools.partial(disproof, fix, brk, before))

    async def _judged(
        self, fix: Fix, before: FileReport, sources: Sources, judge: Callable[[FileReport], Verdict]
    ) -> Verdict:
        """``judge`` of the analysis of the texts ``fix`` makes of ``before``'s."""
        path = before.path
        source = sources.text(path)
        if source is None:
            return "the analysed file cannot be read"
        paths = {edit.path for edit in fix.edits}
        if paths == {path}:
            fixed = apply(source, list(fix.edits))
            return judge(_decided(await self.reanalyse(path, fixed, "")))
        folder = os.path.dirname(path)
        if any(os.path.dirname(edited) != folder for edited in paths):
            return "it edits a file outside the analysed file's folder, which gbls does not re-analyse"
        # In the folder's cache folder: where the sandbox shows the worker the folder, it shows it this.
        cache = os.path.join(folder, FOLDER)
        os.makedirs(cache, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="proof-", dir=cache) as copy:
            for name in os.listdir(folder):
                if name.endswith(".py") and os.path.isfile(os.path.join(folder, name)):
                    text = sources.text(os.path.join(folder, name))
                    if text is None:
                        shutil.copy(os.path.join(folder, name), copy)
                        continue
                    edits = [edit for edit in fix.edits if edit.path == os.path.join(folder, name)]
                    with open(os.path.join(copy, name), "w", encoding="utf-8", newline="") as handle:
                        handle.write(apply(text, edits))
            moved = os.path.join(copy, os.path.basename(path))
            with open(moved, encoding="utf-8", newline="") as handle:
                fixed = handle.read()
            after = await self.reanalyse(moved, fixed, copy)
        return judge(_decided(after))


def _code(text: str) -> str:
    found = code_key(text)
    return code_digest(found[0]) if found is not None else text


def _decided(after: FileReport) -> FileReport:
    if after.failure_kind in UNDECIDED:
        raise Undecided(after.message or after.failure_kind)
    if after.cut is not None:  # ran out of budget this time: the fixed program may not have got as far
        raise Undecided(after.cut.message)
    return after


def _fingerprint(fix: Fix, sources: Sources) -> str:
    """The texts ``fix`` edits. (A break shows in the view of its own file, which need not be the
    one analysed; an edit of the analysed file analyses it again, and proves its fixes again.)"""
    digest = hashlib.sha256()
    for path in sorted({edit.path for edit in fix.edits}):
        digest.update(path.encode() + b"\0" + (sources.text(path) or "").encode() + b"\0")
    return digest.hexdigest()


async def proven_fixes(
    proofs: Proofs, reports: Sequence[FileReport], sources: Sources, folders: list[str], unsafe: bool
) -> tuple[policy.Fixes, dict[tuple[str, BreakKey], str]]:
    """Each break's fix that ``--fix`` applies (``policy.applied``: safe ones only, unless ``unsafe``;
    never a workaround), its candidates proven in order until one passes; and for each break left
    without one why its candidates were not proven."""
    refused: dict[tuple[str, BreakKey], str] = {}
    for report in reports:
        if not provable(report):
            continue
        for brk in report.breaks:
            why: list[str] = []
            for fix in policy.for_break(brk, report.path, sources, folders):
                if not policy.applies(fix, unsafe):
                    continue
                try:
                    verdict = await proofs.prove(fix, brk, report, sources)
                except Undecided as error:
                    verdict = f"the re-analysis could not tell ({error})"
                if verdict is None:
                    break
                why.append(f"{fix.title}: {verdict}")
            else:
                if why:
                    refused[(report.path, brk.key)] = "; ".join(why)
    proven = lambda fix, brk, analysed: proofs.holds(fix, brk, sources)  # noqa: E731
    return policy.applied(reports, sources, folders, proven, unsafe), refused

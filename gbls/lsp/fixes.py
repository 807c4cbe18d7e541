"""The fixes the editor offers: after an analysis is published, each fix offered for its breaks is
proven in the background (``runtime.proofs``: applied to a copy and analysed again by the worker);
the code actions and fix all offer a fix only once its proof has passed on the text as it is now.

A code action request awaits the proofs under way (the event loop stays free: hovers and edits go
on meanwhile), so the lightbulb shows the proven fixes of the analysis it is about. When an
analysis's fixes are proven the server says so in its log ("proved N of M fixes in FILE").
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable

from lsprotocol import types as lsp

from ..engine.fixes import policy
from ..engine.fixes.edits import Fix
from ..engine.fixes.verdict import Undecided, provable
from ..engine.model import BreakReport, FileReport, RecompileReport
from ..engine.sources import Sources
from ..runtime.proofs import of_session
from ..runtime.session import DocumentKey, Session
from .actions import offer
from .hover import FixOf

log = logging.getLogger(__name__)


class Fixes:
    def __init__(self, session: Session, say: Callable[[lsp.LogMessageParams], None]) -> None:
        self.session = session
        self.proofs = of_session(session)
        self.say = say
        # One proof at a time: they take the worker's turns after the analyses, never before them.
        self._turn = asyncio.Lock()
        self._pending: dict[str, asyncio.Task[None]] = {}  # by analysed file: the latest analysis's

    def start(self, report: FileReport, text_of: Callable[[str], str | None]) -> None:
        """Prove the fixes of ``report`` in the background; those of the file's last analysis no longer
        (its text is gone by now)."""
        superseded = self._pending.get(report.path)
        if superseded is not None:
            superseded.cancel()
        task = asyncio.create_task(self.prove(report, text_of))
        self._pending[report.path] = task
        task.add_done_callback(lambda done: self._forget(report.path, done))

    def _forget(self, path: str, done: asyncio.Task[None]) -> None:
        if self._pending.get(path) is done:  # not a later analysis's
            del self._pending[path]

    async def stop(self) -> None:
        """Cancel the proofs under way, and wait until they are gone."""
        pending = list(self._pending.values())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def reports(self) -> list[FileReport]:
        """Every document analysis's report: what fix all applies, as ``gbls check --fix`` would."""
        return [analysed.report for key, analysed in self.session.results() if isinstance(key, DocumentKey)]

    def analysed_of(self, brk: BreakReport, path: str) -> str:
        """The file whose analysis found ``brk``, shown in the file ``path``: its fixes are made and
        proven for that analysis (the flag an ``.item()`` in ``model.py`` needs goes into the
        ``train.py`` that compiles it). The file's own analysis first; ``path`` if none has it."""
        having = [
            report.path
            for report in self.reports()
            if any((b.path, b.key) == (brk.path, brk.key) for b in report.breaks)
        ]
        return path if path in having or not having else having[0]

    def fix_of(self, path: str, text_of: Callable[[str], str | None]) -> FixOf:
        """Each break's first proven fix, for the file ``path`` (what to do first: the first quick
        fix), or why it has none."""
        sources = Sources(text_of)
        verdicts = lambda fix, brk: self.proofs.known(fix, brk, sources)  # noqa: E731
        return lambda brk: offer(brk, self.analysed_of(brk, path), sources, self.session.folders, verdicts)

    async def settled(self) -> None:
        """Once the proofs under way are done (a cancelled request leaves them running)."""
        if self._pending:
            await asyncio.shield(asyncio.gather(*self._pending.values(), return_exceptions=True))

    def holds(self, fix: Fix, brk: BreakReport, sources: Sources) -> bool:
        """Whether ``fix`` of ``brk`` is proven on the texts as they are."""
        return self.proofs.holds(fix, brk, sources)

    def holds_recompile(self, fix: Fix, found: RecompileReport, sources: Sources) -> bool:
        """Whether ``fix`` of the recompilation report ``found`` is proven on the texts as they are."""
        known, verdict = self.proofs.known_recompile(fix, found, sources)
        return known and verdict is None

    def why_not(self, fix: Fix, brk: BreakReport, sources: Sources) -> str | None:
        """Why re-analysis refused ``fix`` of ``brk``; None when it is proven or not yet tried."""
        return self.proofs.known(fix, brk, sources)[1]

    async def prove(self, report: FileReport, text_of: Callable[[str], str | None]) -> None:
        """Prove every fix offered for the breaks of ``report``, then say so in the log."""
        sources = Sources(text_of)
        proven = tried = 0
        candidates: list[tuple[Fix, Callable[[], Awaitable[str | None]]]] = []
        for brk in report.breaks if provable(report) else ():
            for fix in policy.for_break(brk, report.path, sources, self.session.folders):
                candidates.append((fix, functools.partial(self.proofs.prove, fix, brk, report, sources)))
        for found in report.problems if provable(report) else ():
            for fix in policy.for_recompile(found, report, sources):
                candidates.append(
                    (fix, functools.partial(self.proofs.prove_recompile, fix, found, report, sources))
                )
        async with self._turn:
            for fix, prove in candidates:
                tried += 1
                try:
                    verdict = await prove()
                except Undecided as error:  # not refused: tried again with the next analysis
                    log.info("proving %r could not tell: %s", fix.title, error)
                    continue
                except Exception:  # a worker gone mid-proof: the fix stays unproven, not offered
                    log.warning("proving %r failed", fix.title, exc_info=True)
                    continue
                proven += verdict is None
        line = f"proved {proven} of {tried} fixes in {os.path.basename(report.path)}"
        self.say(lsp.LogMessageParams(lsp.MessageType.Info, line))

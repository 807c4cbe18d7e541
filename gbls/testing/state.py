"""What the plugin knows of the project under test: its root, whose code is its own, its baseline.

Torch-free: the plugin sets it up in every run that asks for a baseline, before any test imports
torch. Outside pytest (``gbls.assert_no_graph_breaks`` in a script) the project is the current
folder, with no baseline.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..engine import baseline
from ..engine.baseline import Entry
from ..worker.shared.workspace import installed, library_of


class Project:
    def __init__(self, root: Path, baseline_path: Path | None = None, update: bool = False) -> None:
        self.root = root
        self.package = root.name.lower().replace("-", "_")
        self.baseline_path = baseline_path
        self.update = update
        exists = baseline_path is not None and baseline_path.exists()
        self.entries = baseline.load(str(baseline_path)) if exists and baseline_path else []
        self.folder = str(baseline_path.parent if baseline_path else root)
        self.checked: set[tuple[str, str]] = set()  # (path, function) of every function a check ran
        self.matched: set[Entry] = set()
        self.found: Counter[Entry] = Counter()  # each finding, as often as one check found it

    def owns(self, path: str) -> bool:
        """Whether ``path`` is the project's own code: under its root but not in an environment there,
        or its package (named as the root's folder), wherever it is installed."""
        if installed(path):
            return library_of(path) == self.package
        return Path(path).is_relative_to(self.root)

    def relative(self, path: str) -> str:
        return baseline.relative(path, self.folder)

    def new(self, functions: set[tuple[str, str]], found: list[Entry]) -> list[bool]:
        """For each finding of a check that ran ``functions`` (absolute path, qualname), whether it fails
        the check: everything does without a baseline, nothing while the baseline is being updated."""
        self.checked |= {(self.relative(path), name) for path, name in functions}
        self.found |= Counter(found)  # a function checked twice keeps the most of each finding
        if self.update:
            return [False] * len(found)
        new = baseline.is_new(found, Counter(self.entries))
        self.matched |= {entry for entry, fresh in zip(found, new, strict=True) if not fresh}
        return new

    def removable(self) -> list[Entry]:
        """Entries of the functions checked that no check found."""
        return [
            entry
            for entry in self.entries
            if (entry.path, entry.function) in self.checked and entry not in self.matched
        ]

    def updated(self) -> list[Entry]:
        """The baseline after this run: what it found, and the entries of the functions not checked."""
        kept = [entry for entry in self.entries if (entry.path, entry.function) not in self.checked]
        return kept + list(self.found.elements())


_current: Project | None = None


def current() -> Project:
    global _current
    if _current is None:
        _current = Project(Path.cwd())
    return _current


def start(project: Project | None) -> None:
    """The project of this pytest run (None once it is over)."""
    global _current
    _current = project

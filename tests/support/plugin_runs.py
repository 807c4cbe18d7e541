"""Pytest runs of small projects with gbls's plugin, found as an installed gbls declares it: through
the ``pytest11`` entry point of pyproject.toml, with gbls imported from this checkout."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
ENTRY_POINT = '[project.entry-points.pytest11]\ngbls = "gbls.testing.plugin"\n'


def install_plugin(monkeypatch: pytest.MonkeyPatch, folder: Path, *paths: Path) -> None:
    """Have the pytest runs started from now find gbls's plugin by its entry point (in a distribution's
    metadata in ``folder``), import gbls from this checkout, and find ``paths`` too."""
    assert ENTRY_POINT in (ROOT / "pyproject.toml").read_text()
    metadata = folder / "gbls_entry_point-0.dist-info"
    metadata.mkdir(parents=True)
    (metadata / "METADATA").write_text("Metadata-Version: 2.1\nName: gbls-entry-point\nVersion: 0\n")
    (metadata / "entry_points.txt").write_text("[pytest11]\ngbls = gbls.testing.plugin\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(map(str, [ROOT, folder, *paths])))


def failures(report: Path) -> dict[str, str]:
    """Each test of a JUnit report by name: the whole message it failed with, or "" if it passed."""
    found = {}
    for case in ElementTree.parse(report).iter("testcase"):
        failure = case.find("failure")
        # pytest's report of the exception (the attribute is cut short): its lines marked "E", indented
        # as the line that raised it.
        lines = (failure.text or "").splitlines() if failure is not None else []
        marked = [line for line in lines if line.startswith("E")]
        width = len(marked[0]) - len(marked[0][1:].lstrip()) if marked else 0
        found[case.get("name", "")] = "\n".join(line[width:] for line in marked)
    return found

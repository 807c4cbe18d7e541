"""The manual builds as a site with every warning an error (a broken link or anchor, a page left out
of the navigation), as CI builds it; the README links only to pages that exist."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gbls import manual

from ..support import ROOT


def mkdocs() -> str:
    found = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("mkdocs is missing: the dev (or docs) extra installs mkdocs-material")
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    return found


def test_the_manual_builds_strict(tmp_path: Path) -> None:
    result = subprocess.run(
        [mkdocs(), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "recompilations" / "index.html").is_file()


def test_the_readme_links_to_pages_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(((?:docs/)?[\w./-]+?)(?:#[\w-]+)?\)", readme)
    assert "docs/index.md" in links
    missing = [link for link in links if not (ROOT / link).exists()]
    assert missing == []


def test_the_manual_has_one_address_and_every_page_gbls_links() -> None:
    documentation = re.search(r'^Documentation = "(\S+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    site_url = re.search(r"^site_url: (\S+)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert documentation is not None and site_url is not None
    assert manual.MANUAL == documentation[1] == site_url[1]
    linked = set()
    for path in (ROOT / "gbls").rglob("*.py"):
        linked |= set(re.findall(r"\bpage\([\"'](\w[\w-]*)[\"']", path.read_text()))
    assert {"recompilations", "cuda", "sandbox"} <= linked
    assert sorted(name for name in linked if not (ROOT / "docs" / f"{name}.md").is_file()) == []

"""The sandbox's environment filter and what it shows the worker, without starting anything: what
the analysed code's environment keeps of the server's, the folders its interpreter imports from."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gbls.runtime import sandbox
from gbls.runtime.sandbox import import_folders, worker_environment

from ..support import SECRETS


def test_environment_filter() -> None:
    base = {**SECRETS, "PATH": "/bin", "HOME": "/home/u", "PYTHONPATH": "/lib", "LC_ALL": "C", "EDITOR": "vi"}
    environment = worker_environment(base)
    assert environment["PYTHONPATH"] == "/lib"  # the workspace comes per analysis, after the imports
    assert environment["CUDA_VISIBLE_DEVICES"] == ""
    assert {"PATH", "HOME", "LC_ALL"} <= set(environment)
    assert not ({"EDITOR", *SECRETS} & set(environment))


def test_the_folders_an_interpreter_imports_from_outside_its_environment(tmp_path: Path) -> None:
    site_packages = tmp_path / "lib" / "python3.11" / "site-packages"
    site_packages.mkdir(parents=True)
    (site_packages / "outer.pth").write_text(
        "# a comment\n/tmp/ci/.venv/lib\n\nrelative/pkgs\nimport _virtualenv\n"
    )
    (site_packages / "other.pth").write_text("/opt/shared\n")
    found = import_folders(str(tmp_path), {"PYTHONPATH": "/tmp/lib:"})
    # site reads an "import" line as code: it names no folder.
    assert found == ["/tmp/lib", "/opt/shared", "/tmp/ci/.venv/lib", str(site_packages / "relative" / "pkgs")]


def test_the_worker_sees_all_of_gbls_where_it_lives_under_tmp(monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout under /tmp installed in editable mode: the interpreter finds gbls there, and a
    pytest the analysed program starts loads gbls's plugin from it (else pytest exits with 3)."""
    monkeypatch.setattr(sandbox, "PACKAGE", Path("/tmp/checkout/gbls"))
    monkeypatch.setattr(sandbox, "bwrap_support", lambda: sandbox.Bwrap(sized=True, admin=True))
    command = sandbox.launch(sys.executable, ["/tmp/project"], "bwrap").command
    binds = [command[index + 1] for index, part in enumerate(command) if part == "--ro-bind-try"]
    assert "/tmp/checkout/gbls" in binds and "/tmp/project" in binds

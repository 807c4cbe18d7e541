"""The sandbox's environment filter and what it shows the worker, without starting anything: what
the analysed code's environment keeps of the server's, the folders its interpreter imports from."""

from __future__ import annotations

from pathlib import Path

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

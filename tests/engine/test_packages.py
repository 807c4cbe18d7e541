"""The packages install anywhere: the sdist and the wheel, built from this checkout, pass ``twine
check`` and hold every file of gbls (the worker's start-up hook and the gb_id table among them); the
wheel, installed into a fresh virtual environment outside the checkout, checks a copied example as the
quick start does and answers an LSP session over stdio."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ..support import ROOT
from .test_action import job_python

# The files of gbls/ the wheel must hold beside its modules: what the worker and its spawned
# interpreters read at run time.
NEEDED = {
    "gbls/worker/__main__.py",
    "gbls/worker/spawned/site/sitecustomize.py",
    "gbls/worker/shared/gb_ids.json",
}


def require(module: str) -> None:
    """``build`` and ``twine`` come with the dev extra; CI has them."""
    found = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0
    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{module} is missing: the dev extra installs it")
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require("build")
    folder = tmp_path_factory.mktemp("dist")
    # No isolation: the build uses this environment's setuptools instead of downloading one.
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(folder), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return folder


def wheel_of(dist: Path) -> Path:
    (wheel,) = dist.glob("gbls-*-py3-none-any.whl")
    return wheel


def test_the_packages_render_and_hold_every_file_of_gbls(dist: Path) -> None:
    require("twine")
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tracked = subprocess.run(
        ["git", "ls-files", "gbls"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert NEEDED <= set(tracked)
    in_wheel = set(zipfile.ZipFile(wheel_of(dist)).namelist())
    assert sorted(set(tracked) - in_wheel) == []
    (sdist,) = dist.glob("gbls-*.tar.gz")
    listed = subprocess.run(["tar", "tzf", str(sdist)], capture_output=True, text=True, check=True).stdout
    in_sdist = {name.split("/", 1)[1] for name in listed.split()}
    assert sorted(set(tracked) - in_sdist) == []


def message(body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def answer(server: subprocess.Popen[bytes], request: int) -> Any:
    """The server's answer to the request ``request``, read from its stdout (notifications skipped)."""
    assert server.stdout is not None
    while True:
        headers = {}
        while (line := server.stdout.readline().strip()) != b"":
            name, _, value = line.decode().partition(": ")
            headers[name] = value
        body = json.loads(server.stdout.read(int(headers["Content-Length"])))
        if body.get("id") == request and "method" not in body:
            return body["result"]


def test_the_wheel_installs_outside_the_checkout_and_works(dist: Path, tmp_path: Path) -> None:
    python = job_python(tmp_path / "venv")  # torch and the other dependencies through a .pth file
    wheel = str(wheel_of(dist))
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", wheel],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    gbls = python.parent / "gbls"
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    found = subprocess.run(
        [str(python), "-c", "import gbls; print(gbls.__file__)"],
        cwd=tmp_path,  # not the checkout, whose gbls/ `python -c` would import
        capture_output=True,
        text=True,
        env=env,
    )
    assert found.stdout.startswith(str(tmp_path / "venv")), found.stdout + found.stderr
    work = tmp_path / "work"
    (work / "examples").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "demo.py", work / "examples" / "demo.py")
    check = subprocess.run(
        [str(gbls), "check", "examples/demo.py"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert check.returncode == 1, check.stderr
    readme = (ROOT / "README.md").read_text()
    assert f"<!-- gbls-output: gbls check examples/demo.py -->\n```\n{check.stdout}```" in readme

    # A real session over stdio, as an editor starts it: each answer awaited before going on.
    server = subprocess.Popen(
        [str(gbls), "serve"], cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert server.stdin is not None
    try:
        initialize = {"processId": os.getpid(), "rootUri": work.as_uri(), "capabilities": {}}
        server.stdin.write(message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}))
        server.stdin.flush()
        result = answer(server, 1)
        assert result["serverInfo"]["name"] == "gbls" and result["capabilities"]["hoverProvider"]
        server.stdin.write(message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.write(message({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}))
        server.stdin.flush()
        assert answer(server, 2) is None
        server.stdin.write(message({"jsonrpc": "2.0", "method": "exit", "params": None}))
        server.stdin.close()
        assert server.wait(timeout=60) == 0
    finally:
        server.kill()
        server.wait()

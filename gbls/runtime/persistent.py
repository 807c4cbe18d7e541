"""What the persistent cache (``engine.store``) keys an analysis on beyond its files, and which folder
holds it: the analysis (the file, or the run with its arguments, working directory and
environment), gbls's settings and its own code and version, the environment the worker gives the
analysed code, and the interpreter's: its version and path, and every distribution installed for it
(torch's and every third-party package's version). Whatever of these changes, the analysis runs again.

The interpreter's distributions are read by running it with ``-I -S`` (no site, no ``.pth`` file,
nothing of the user's runs) on a short script that lists its site-packages folders' metadata.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__
from ..engine.model import FileReport
from ..engine.sources import TextOf
from ..engine.store import FOLDER, Hit, Store, lookup
from ..settings import Settings, cache_dir_from_environment, cache_off_by_environment
from ..worker.shared.protocol import Run, to_dict
from .sandbox import worker_environment

PROBE = """
import json, os, site, sys
site.venv(set())
folders = [*site.getsitepackages(), site.getusersitepackages()]
found = []
for folder in folders:
    try:
        names = os.listdir(folder)
    except OSError:
        continue
    found += [n for n in names if n.endswith((".dist-info", ".egg-info", ".egg-link", ".pth"))]
print(json.dumps({"python": sys.version, "executable": sys.executable, "prefix": sys.prefix,
                  "folders": folders, "distributions": sorted(found)}))
"""
PROBE_SECONDS = 30
# Variables that change where gbls keeps its cache or what it logs, not what an analysis finds.
NOT_KEYED = {"GBLS_WORKER_LOG"}


@functools.lru_cache(maxsize=8)
def interpreter(python: str) -> str | None:
    """What the interpreter ``python`` is: its version, path and installed distributions, as JSON;
    None if it does not run (the worker's start then says why)."""
    executable = shutil.which(python) or python
    try:
        done = subprocess.run(
            [executable, "-I", "-S", "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_SECONDS,
            env=worker_environment(),
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        found = json.loads(done.stdout)
    except ValueError:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("distributions"), list):
        return None
    return json.dumps(found, sort_keys=True)


@functools.lru_cache(maxsize=1)
def own_code() -> str:
    """A digest of gbls's own modules: a gbls changed in place (a development install) re-analyses."""
    package = Path(__file__).parent.parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def from_environment(say: Callable[[str], None]) -> Persistent | None:
    """The language server's cache: ``GBLS_CACHE_DIR``, else each workspace folder's ``.gbls_cache``;
    None if ``GBLS_NO_CACHE`` turns it off."""
    if cache_off_by_environment():
        return None
    return Persistent(cache_dir_from_environment() or None, say)


class Persistent:
    """The cache folders of a session: ``folder`` for every analysis (``gbls check``'s), else each
    workspace folder's ``.gbls_cache``; what goes wrong with them is said through ``say``."""

    def __init__(self, folder: str | None, say: Callable[[str], None]) -> None:
        self.folder = folder
        self.say = say
        self._stores: dict[str, Store] = {}

    def store(self, workspace: str) -> Store:
        folder = os.path.abspath(self.folder or os.path.join(workspace, FOLDER))
        found = self._stores.get(folder)
        if found is None:
            found = self._stores[folder] = Store(folder, self.say)
        return found

    @staticmethod
    def key(settings: Settings, path: str, workspace: str, run: Run | None, start: str = "") -> str | None:
        """The lookup key of the analysis of ``path`` started in the folder ``start`` (or of ``run``);
        None if the interpreter does not run. Runs the interpreter once per interpreter: call it off
        the event loop."""
        python = settings.interpreter or sys.executable
        found = interpreter(python)
        if found is None:
            return None
        environment = {
            name: value
            for name, value in worker_environment(gpu=settings.gpu).items()
            if name not in NOT_KEYED
        }
        parts: dict[str, Any] = {
            "gbls": __version__,
            "code": own_code(),
            "interpreter": found,
            "environment": environment,
            "settings": [to_dict(settings.for_worker()), list(settings.worker_key())],
            "path": path,
            "workspace": workspace,
            "run": to_dict(run) if run is not None else None,
            "start": start,
        }
        return lookup(**parts)

    async def load(
        self,
        settings: Settings,
        path: str,
        workspace: str,
        text_of: TextOf,
        run: Run | None = None,
        start: str = "",
    ) -> Hit | None:
        def work() -> Hit | None:
            key = self.key(settings, path, workspace, run, start)
            return self.store(workspace).load(key, path, text_of) if key else None

        return await asyncio.to_thread(work)

    async def save(
        self,
        settings: Settings,
        workspace: str,
        report: FileReport,
        text_of: TextOf,
        run: Run | None = None,
        start: str = "",
    ) -> None:
        """Keep ``report`` (a finished analysis: its failures are not kept, they may not repeat)."""
        if report.status != "ok":
            return

        def work() -> None:
            key = self.key(settings, report.path, workspace, run, start)
            if key:
                files = [report.path, *report.executed] if report.path else list(report.executed)
                self.store(workspace).save(key, report.torch, files, report, text_of)

        await asyncio.to_thread(work)

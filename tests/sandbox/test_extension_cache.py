"""A just-in-time C++ extension (load_inline) is built once and reused by the next analysis, as by
the next plain ``python`` run. Under bubblewrap torch's own cache (under the home folder) is
read-only: the builds go to a folder of the worker's private /tmp that each analysis sees, and
that outlives it. Without bubblewrap torch's own cache is used, as ever."""

from __future__ import annotations

import os
import shutil

import pytest

from gbls.settings import Settings

from ..engine.test_engine import assert_agrees_with_torch, assert_same_roots
from ..support import FIXTURES
from ..support.torchlog import logged_script
from ..support.worker import Analyse
from .test_sandbox import require_bwrap

FIXTURE = FIXTURES / "scripts" / "inline_extension.py"


def require_builders() -> None:
    """load_inline needs a C++ compiler and ninja (Debian's ninja-build)."""
    if shutil.which("ninja") and shutil.which("c++"):
        return
    if os.environ.get("CI") == "true":
        pytest.fail("ninja or a C++ compiler is missing, and CI needs them")
    pytest.skip("ninja or a C++ compiler is missing here")


async def test_an_extension_built_in_one_analysis_is_loaded_by_the_next(analyse_file: Analyse) -> None:
    require_bwrap()
    require_builders()
    # The first build compiles torch's headers: minutes on a loaded two-core machine.
    first = await analyse_file(FIXTURE, settings=Settings(timeout=900))
    assert first.status == "ok", first.message
    # The default timeout: a second build would not fit in it. ninja finds the build up to date.
    second = await analyse_file(FIXTURE)
    assert second.status == "ok", second.message
    assert "ninja: no work to do." in second.output
    assert second.output.strip().endswith("[2.0, 2.0] 42")
    logged = logged_script(FIXTURE).main
    assert_same_roots(second, logged)
    assert_agrees_with_torch(second, FIXTURE, logged)

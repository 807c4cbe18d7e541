"""gbls's hooks read Dynamo's state as it is: a program analysed by gbls gets the guards plain
python gives it.

The oracle is torch's own ``TORCH_LOGS=guards`` of ``python FILE``; gbls's side is the same log of
``gbls check --in-process FILE``, the analysis in the ``gbls`` process itself, where the guards
Dynamo builds under gbls's hooks are logged by the same torch. A hook that made Dynamo build a
variable it had left lazy (a list argument an inlined function never reads) shows there as guards
on that argument: its type, its length, each of its items.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ..support import FIXTURES, ROOT
from ..support.forked import run_forked

GUARDS = FIXTURES / "guards"
GUARD_LINE = re.compile(r"\[__guards\] (\| .*)$")
# Ids of objects and types: another process, other numbers.
OBJECT_ID = re.compile(r"\b\d{8,}\b")


def logged_guards(command: list[str], cwd: Path, codes: tuple[int, ...] = (0,)) -> tuple[list[str], str]:
    """The guard trees torch logs for ``command`` (object ids blanked), and its whole stderr;
    ``codes``: how it may exit (``gbls check`` exits 1 when it found breaks)."""
    environment = dict(os.environ, TORCH_LOGS="guards")
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode in codes, done.stderr[-3000:]
    return guards_in(done.stderr), done.stderr


def logged_script_guards(path: Path) -> list[str]:
    """The guard trees torch logs for ``python PATH`` from its folder, in a child forked from an
    interpreter that imported torch (``forked``)."""
    environment = dict(os.environ, TORCH_LOGS="guards")
    with tempfile.NamedTemporaryFile("r", suffix=".log") as stderr:
        ran = run_forked(
            path, cwd=path.parent, environment=environment, stdout=Path(os.devnull), stderr=Path(stderr.name)
        )
        log = stderr.read()
    assert ran.status == 0, log[-3000:]
    return guards_in(log)


def guards_in(log: str) -> list[str]:
    found = [match.group(1) for line in log.splitlines() if (match := GUARD_LINE.search(line))]
    return [OBJECT_ID.sub("ID", line) for line in found]


@pytest.mark.parametrize("name", ["list_argument.py"])
def test_the_capture_adds_no_guard_and_its_hooks_do_not_fail(name: str) -> None:
    fixture = GUARDS / name
    plain = logged_script_guards(fixture)
    gbls = [sys.executable, "-m", "gbls", "check", "--in-process", str(fixture)]
    analysed, log = logged_guards(gbls, ROOT)  # where ``-m gbls`` finds gbls, installed or not
    assert "hook failed" not in log
    assert any("L['x']" in line for line in plain)  # not vacuous: the tensor it reads is guarded
    # Dynamo guards no item of the lists (2.6 guards their type and length when it inlines with them).
    assert not any("L['numbers'][" in line or "L['tensors'][" in line for line in plain)
    assert analysed == plain

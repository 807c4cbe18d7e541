"""Programs that end with SystemExit, as scripts, test runners and command-line tools do.

Status 0, None or False is a normal end: the file is analysed like one that ran to its last
line. Any other status is said as the program's exit status (with argparse's message when
argparse refused the arguments), and only what the program never reached is not analysed. Each
fixture runs as ``python file.py`` (its own ``sys.argv``) for torch's log too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..support import FIXTURES
from ..support.torchlog import logged_script
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch, assert_same_roots

ROOT = Path(__file__).parent.parent.parent
SCRIPTS = FIXTURES / "scripts"


@dataclass(frozen=True)
class Ending:
    message: str = ""  # the failure's message; "" when the program ended well
    line: int = 0  # the failure's line


ENDINGS = {
    "exit_zero.py": Ending(),  # sys.exit(main()), main() returning 0
    "raise_systemexit.py": Ending(),  # raise SystemExit: status None
    "unittest_main.py": Ending(),  # unittest.main(): sys.exit(False) when the tests pass
    "click_command.py": Ending(),  # a click command: SystemExit(0)
    "exit_status.py": Ending("the program exited with status 3", 29),
    "argparse_usage.py": Ending(
        "the program exited with status 2: the following arguments are required: --steps "
        "(argparse; usage in the output)",
        18,
    ),
}


@pytest.mark.parametrize("name", sorted(ENDINGS))
async def test_a_program_that_exits_is_analysed_as_it_ran(analyse_file: Analyse, name: str) -> None:
    fixture = SCRIPTS / name
    expected = ENDINGS[name]
    report = await analyse_file(fixture)
    if expected.message:
        assert (report.status, report.failure_kind, report.message) == ("error", "exit", expected.message)
        assert report.failure_span is not None and report.failure_span.line == expected.line
    else:
        assert (report.status, report.message) == ("ok", ""), report.message
    logged = logged_script(fixture).main
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)


async def test_only_what_the_program_never_reached_is_not_analysed(analyse_file: Analyse) -> None:
    report = await analyse_file(SCRIPTS / "exit_status.py")
    analysed = {function.qualname: function.analysed for function in report.functions}
    # never_called was defined before the exit: gbls calls it with synthesized inputs.
    assert analysed == {"step": True, "never_called": True, "build.<locals>.scale": False}
    (late,) = [function for function in report.functions if not function.analysed]
    assert late.target.reason.startswith("the module stopped before its torch.compile call")


def check(*files: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gbls", "check", "--format", "json", *(str(SCRIPTS / name) for name in files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    ("name", "status"),
    [("click_command.py", 0), ("exit_zero.py", 1), ("exit_status.py", 2)],
)
def test_gbls_check_exit_codes_of_programs_that_exit(name: str, status: int) -> None:
    """A clean program that exits with 0 passes, one with breaks has them found, a failing one fails."""
    result = check(name)
    assert result.returncode == status, result.stderr
    (entry,) = json.loads(result.stdout)["files"]
    assert entry["status"] == ("error" if status == 2 else "ok")

"""``gbls check --fix`` for real: the safe fixes applied on disk, the others reported."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..support import FIXTURES, ROOT

FIXES = FIXTURES / "fixes"


def check(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``gbls check`` run in ``cwd``, with this checkout's gbls, also where it is not installed (the
    compatibility venvs)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "gbls", "check", *arguments]
    environment = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=cwd, env=environment)


def test_check_fix_applies_the_safe_fixes(tmp_path: Path) -> None:
    for name in ("item_call.py", "explicit_break.py", "print_call.py"):
        shutil.copy(FIXES / name, tmp_path / name)
    first = check("--fix", str(tmp_path), cwd=tmp_path)
    assert (
        "Fixed GB0124 in item_call.py:9: Enable torch._dynamo.config.capture_scalar_outputs" in first.stdout
    )
    assert (
        "Fixed GB0025 in explicit_break.py:7: Remove the explicit torch._dynamo.graph_break()" in first.stdout
    )
    # Removing a print changes what the program does: not a safe fix, so it stays, and is reported.
    assert "print_call.py:7:5: GB0059" in first.stdout
    assert first.returncode == 1
    assert "capture_scalar_outputs = True" in (tmp_path / "item_call.py").read_text()
    second = check("--fix", str(tmp_path), cwd=tmp_path)
    assert "Fixed" not in second.stdout
    assert (tmp_path / "item_call.py").read_text().count("capture_scalar_outputs") == 1


def test_check_fix_unsafe_applies_what_keeps_the_meaning_and_never_a_workaround(tmp_path: Path) -> None:
    """``--unsafe-fixes``: a print in a loop gets the fix that keeps its output (the reordering), not
    its removal; an operator with no meta kernel, with no fix of its own, keeps its break (moving it
    into a disabled function is a workaround, never applied)."""
    shutil.copy(FIXTURES / "torch_tests" / "progress_print.py", tmp_path / "progress_print.py")
    shutil.copy(FIXTURES / "hatches" / "counted.py", tmp_path / "counted.py")
    ran = check("--fix", "--unsafe-fixes", str(tmp_path), cwd=tmp_path)
    assert "Fixed GB0059 in progress_print.py:10: Let Dynamo print after the graph" in ran.stdout, ran.stdout
    fixed = (tmp_path / "progress_print.py").read_text()
    assert "reorderable_logging_functions.add(print)" in fixed and 'print("step", step)' in fixed
    assert (tmp_path / "counted.py").read_text() == (FIXTURES / "hatches" / "counted.py").read_text()
    assert "counted.py:16:" in ran.stdout and ran.returncode == 1


def test_check_fix_unsafe_holds_each_fix_to_what_the_program_printed(tmp_path: Path) -> None:
    """The fixes ``gbls check`` offers are proven as the editor's are, the fixed program held to
    what the analysed one printed: in validated.py, asserting with ``torch._assert`` would add
    torch's own lines to the assertion message the program prints, so neither break's fix is that
    one (``--diff`` shows each break's fix): the check runs before the compiled code, and the fixed
    program prints what it printed."""
    shutil.copy(FIXTURES / "hatches" / "validated.py", tmp_path / "validated.py")

    def printed() -> str:
        command = [sys.executable, "validated.py"]
        ran = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout

    before = printed()
    shown = check("--diff", "--unsafe-fixes", "--no-cache", "validated.py", cwd=tmp_path)
    assert "+def _normalized_compiled(x):" in shown.stdout, shown.stdout
    assert "torch._assert" not in shown.stdout, shown.stdout
    fixing = check("--fix", "--unsafe-fixes", "--no-cache", "validated.py", cwd=tmp_path)
    assert "Fixed GB0034 in validated.py:8: Run normalized's leading check" in fixing.stdout, fixing.stdout
    assert printed() == before

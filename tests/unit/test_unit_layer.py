"""The unit layer runs where torch is not installed: none of its modules, nor the conftest every
layer loads, may import torch or pytest-lsp. CI's environment has both, so only this test sees it."""

from __future__ import annotations

import subprocess
import sys

from ..support import ROOT


def test_the_unit_layer_imports_neither_torch_nor_pytest_lsp() -> None:
    unit = sorted((ROOT / "tests" / "unit").glob("*.py"))
    modules = ["tests.conftest", *(f"tests.unit.{path.stem}" for path in unit)]
    # A module that is None in sys.modules raises ImportError on import, as one not installed does.
    program = "import sys\nsys.modules.update(torch=None, pytest_lsp=None)\n"
    program += "".join(f"import {module}\n" for module in modules)
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr

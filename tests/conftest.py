"""What every layer loads: it imports neither torch nor pytest-lsp, so that tests/unit runs where
neither is installed. The tests of a layer that runs torch (through the warm worker, the server or
``gbls check``) are marked ``torch`` here, by their folder: ``pytest -m "not torch"`` leaves them out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Every `gbls check` and server the tests start analyses afresh, and writes no `.gbls_cache` into the
# repository: the tests of the persistent cache name their own folder and take this out.
os.environ["GBLS_NO_CACHE"] = "1"

TESTS = Path(__file__).parent
# tests/editors marks its own: its TypeScript tests need node, not torch.
TORCH_LAYERS = {"engine", "lsp", "sandbox", "projects"}
# pytest's own fixture for running pytest on small projects (gbls's plugin's tests).
pytest_plugins = ["pytester"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.relative_to(TESTS).parts[0] in TORCH_LAYERS:
            item.add_marker(pytest.mark.torch)

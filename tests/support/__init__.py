"""What the test layers share: where the repository and the fixture files are, the LSP client's
helpers (lsp.py), torch's own logs as the oracle (torchlog.py, torchlog_recompiles.py) and the warm
worker's fixtures (worker.py, for the layers that run torch)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

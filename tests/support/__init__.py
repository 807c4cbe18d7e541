"""What the test layers share: where the repository and the fixture files are, and the LSP client's
helpers (lsp.py)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

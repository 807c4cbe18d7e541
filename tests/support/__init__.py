"""What the test layers share: where the repository and the fixture files are, the secrets no
analysed code may see, the LSP client's helpers (lsp.py), torch's own logs as the oracle (torchlog.py,
torchlog_recompiles.py), plain python runs forked from an interpreter that imported torch (forked.py)
and the warm worker's fixtures (worker.py, for the layers that run torch)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# In the environment of the CLI and the server (tests/sandbox) and of the worker's filter (tests/unit):
# none of them may reach the analysed code.
SECRETS = {
    "TORCH_HUB_TOKEN": "t0ken",
    "PYTORCH_API_KEY": "k3y",
    "AWS_SECRET_ACCESS_KEY": "s3cret",
    "GITHUB_TOKEN": "gh",
}

"""Code written for CUDA in the editor: a call that needs a GPU, not run, is said on its line."""

from __future__ import annotations

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from ..support import FIXTURES
from ..support.lsp import close, open_and_wait, until

CUDA = FIXTURES / "cuda"


async def test_the_editor_shows_a_cuda_only_call_as_information(client: LanguageClient) -> None:
    path = CUDA / "synchronize.py"
    diagnostics = await open_and_wait(client, path)
    try:
        cuda_only = [d for d in diagnostics if d.code == "not-checkable"]
        assert len(cuda_only) == 5
        (first,) = [d for d in cuda_only if d.range.start.line == 6]  # the one inside the compiled step
        assert first.range == lsp.Range(lsp.Position(6, 4), lsp.Position(6, 28))
        assert first.severity == lsp.DiagnosticSeverity.Information and first.source == "gbls"
        assert first.message.startswith("not checkable here: `torch.cuda.synchronize()`")
        assert {d.code for d in diagnostics} - {"not-checkable"} == {"GB0059", "GB0036"}
        # The note that CUDA was mapped informs: in the log (the output channel), never a pop-up. It is
        # sent after the diagnostics, and the client may not have read it yet.
        await until(lambda: any("CUDA was mapped to the CPU" in m.message for m in client.log_messages))
        assert not any("CUDA was mapped" in m.message for m in client.messages)
    finally:
        await close(client, path)

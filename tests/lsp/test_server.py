"""The language server over LSP: a real gbls server process driven by pytest-lsp's client."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.protocol.json_rpc import JsonRPCRequestMessage
from pytest_lsp import LanguageClient

from ..support import FIXTURES
from ..support.lsp import (
    Recorder,
    close,
    diagnostics_for,
    open_and_wait,
    proofs_done,
    published_after,
    until,
    uri_of,
)
from ..support.measured import unmeasured

LSP = FIXTURES / "lsp"
ENGINE = FIXTURES / "engine"


@pytest.fixture
async def main_py(client: LanguageClient) -> AsyncIterator[list[lsp.Diagnostic]]:
    """main.py open and analysed, closed afterwards: each test stands alone."""
    yield await open_and_wait(client, LSP / "main.py")
    await close(client, LSP / "main.py")


async def test_diagnostics_ranges_related_information_and_links(
    client: LanguageClient, main_py: list[lsp.Diagnostic]
) -> None:
    """The break is in helpers.py, on its print; main.py holds where g's graph splits, at middle(y)."""
    (split,) = [d for d in main_py if d.code == "GB0059"]
    assert split.range == lsp.Range(lsp.Position(8, 8), lsp.Position(8, 17))  # `middle(y)`
    assert split.severity == lsp.DiagnosticSeverity.Information and split.source == "gbls"
    assert split.message == (
        "the graph of `g` splits here: Failed to trace builtin operator (print) at helpers.py:2 "
        "(via middle → helper)"
    )
    assert [(r.location.uri, r.location.range.start.line) for r in split.related_information or []] == [
        (uri_of(LSP / "helpers.py"), 1)
    ]
    helpers = uri_of(LSP / "helpers.py")
    (brk,) = await until(lambda: [d for d in client.diagnostics.get(helpers, []) if d.code == "GB0059"])
    assert brk.range == lsp.Range(lsp.Position(1, 4), lsp.Position(1, 33))  # the print
    assert brk.severity == lsp.DiagnosticSeverity.Warning and brk.source == "gbls"
    assert brk.message == "Failed to trace builtin operator (print) (via middle → helper)"
    assert brk.code_description is not None
    assert (
        brk.code_description.href == "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html"
    )
    related = brk.related_information or []
    assert [(r.location.uri, r.location.range.start.line) for r in related] == [
        (uri_of(LSP / "main.py"), 8),
        (helpers, 6),
        (helpers, 1),
    ]
    assert related[1].location.range == lsp.Range(lsp.Position(6, 11), lsp.Position(6, 24))
    assert brk.data == {
        "kind": "break",
        "file": str(LSP / "helpers.py"),
        "key": ["g", "Failed to trace builtin operator", 2, 4, 9, 8],
    }
    (not_analysed,) = [
        d for d in main_py if d.severity == lsp.DiagnosticSeverity.Information and d.code != "GB0059"
    ]
    assert not_analysed.range.start.line == 18 and "needs_matrix not analysed" in not_analysed.message
    assert "inputs invalid" in not_analysed.message


async def test_hover_on_a_break_and_on_a_function(
    client: LanguageClient, main_py: list[lsp.Diagnostic]
) -> None:
    uri = uri_of(LSP / "main.py")
    # The proofs of this text's fixes, whichever analysis of it proved them (verdicts are kept).
    await proofs_done(client, LSP / "main.py", 0)
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(8, 10))
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    # What to do first, the first fix proven: a shape is no argument Dynamo reorders a print with
    # (the reordering is refused), and printed from the graph the output stays the same. The
    # diagnostic's title is above the hover already.
    assert text.startswith(
        "**To do:** Print from the graph: torch.\\_higher_order_ops.print. **Failed to trace builtin "
    )
    assert "[GB0059](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html)" in text
    assert "`print`" in text
    assert f"`helper` ([lsp/helpers.py:2]({uri_of(LSP / 'helpers.py')}#L2))" in text
    assert "**How `g` splits**: graph 1 · 1 op (line 8) → **break at line 9**" in text
    summary = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(6, 5))
    )
    assert summary is not None
    assert "**`g`** · compiled function" in summary.contents.value  # type: ignore[union-attr]
    assert "1 break" in summary.contents.value  # type: ignore[union-attr]
    # A function no input ran: how to declare some, with no shape guessed for it.
    unrun = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(17, 5))
    )
    assert unrun is not None
    advice = unrun.contents.value  # type: ignore[union-attr]
    assert "`# gbls: example(...)`, the arguments as the code that calls it passes them" in advice
    assert "torch.randn" not in advice
    nothing = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(0, 0))
    )
    assert nothing is None


async def test_code_lens_per_compiled_function(client: LanguageClient, main_py: list[lsp.Diagnostic]) -> None:
    uri = uri_of(LSP / "main.py")
    found = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    titles = {lens.range.start.line: unmeasured(lens.command.title) for lens in found or [] if lens.command}
    assert titles[5].startswith("gbls: 5 graphs · 1 break · ")
    assert titles[12] == "gbls: fullgraph-clean · 1 graph"
    assert titles[17].startswith("gbls: not analysed: no synthesized input worked")


async def test_code_actions_include_suppression(
    client: LanguageClient, main_py: list[lsp.Diagnostic]
) -> None:
    uri = uri_of(LSP / "main.py")
    brk = next(d for d in main_py if d.code == "GB0059")
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri), brk.range, lsp.CodeActionContext(diagnostics=[brk])
        )
    )
    titles = [a.title for a in actions or [] if isinstance(a, lsp.CodeAction)]
    assert "Suppress GB0059 on this line (# gbls: ignore[GB0059])" in titles
    edit = next(a for a in actions or [] if isinstance(a, lsp.CodeAction) and "GB0059" in a.title).edit
    assert edit is not None and edit.changes is not None
    (text_edit,) = edit.changes[uri]  # on the line of the diagnostic: where g's graph splits
    assert text_edit.new_text == "    z = middle(y)  # gbls: ignore[GB0059]"


async def test_the_root_causes_file_open_shows_the_break(
    client: LanguageClient, main_py: list[lsp.Diagnostic]
) -> None:
    diagnostics = await open_and_wait(client, LSP / "helpers.py")
    (brk,) = [d for d in diagnostics if d.code == "GB0059"]
    assert brk.range.start.line == 1 and brk.severity == lsp.DiagnosticSeverity.Warning
    await close(client, LSP / "helpers.py")


async def test_report_command_and_progress(client: LanguageClient, main_py: list[lsp.Diagnostic]) -> None:
    uri = uri_of(LSP / "main.py")
    report = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="gbls.showReport", arguments=[uri, "g"])
    )
    assert isinstance(report, str)
    assert report.startswith("# gbls report: lsp/main.py") and "## g" in report
    assert "### lsp/helpers.py:2: " in report  # the break is on its cause, in helpers.py
    kinds = [
        [getattr(value, "kind", None) for value in values] for values in client.progress_reports.values()
    ]
    assert ["begin", "end"] in kinds


async def test_only_the_last_version_is_published_under_rapid_edits(client: LanguageClient) -> None:
    path = LSP / "rapid.py"
    uri = uri_of(path)
    await open_and_wait(client, path)
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    seen = len(recorder.history)
    text = path.read_text()
    for version in range(2, 7):
        text = text.replace("    return torch.relu(z)", f"    print({version})\n    return torch.relu(z)", 1)
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        # Longer than the debounce, shorter than an analysis: each one starts, and the next edit stops it.
        await asyncio.sleep(0.3)
    diagnostics = await diagnostics_for(client, uri)
    await asyncio.sleep(1.0)  # a stale result would arrive now
    published = [d for u, d in recorder.history[seen:] if u == uri]
    assert len(published) == 1
    # Version 6 has five prints, each a break; any earlier version has fewer.
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("GB0059", line) for line in range(10, 15)]
    await close(client, path)


async def test_syntax_error_gets_one_diagnostic_where_it_is(client: LanguageClient) -> None:
    (diagnostic,) = await open_and_wait(client, LSP / "broken.py")
    assert diagnostic.severity == lsp.DiagnosticSeverity.Error
    assert diagnostic.range.start.line == 4
    assert "SyntaxError" in diagnostic.message
    await close(client, LSP / "broken.py")


def _shown(diagnostics: list[lsp.Diagnostic]) -> list[tuple[object, int, int]]:
    return [(d.code, d.range.start.line, d.range.start.character) for d in diagnostics]


async def test_a_closed_file_keeps_its_diagnostics(client: LanguageClient) -> None:
    """In the Problems panel, whether the file is open or not: closing it republishes them as the
    file's (no document version), nothing else."""
    path = ENGINE / "print_body.py"
    opened = await open_and_wait(client, path)
    assert _shown(opened) == [("GB0059", 6, 4)]
    assert _shown(await close(client, path)) == _shown(opened)


async def test_a_file_closed_unsaved_shows_what_its_saved_text_has(client: LanguageClient) -> None:
    """Closed without saving an edit that removed its break: the file on disk still has it."""
    path = ENGINE / "print_body.py"
    edited = path.read_text().replace('print("scaling", y.shape)', "y.shape")
    assert _shown(await open_and_wait(client, path, edited)) == []
    assert _shown(await close(client, path)) == [("GB0059", 6, 4)]


async def test_server_never_imports_torch(client: LanguageClient) -> None:
    server = [
        pid
        for pid in os.listdir("/proc")
        # python -m gbls, the server: not the torch-log runners, whose code names gbls's elision
        if pid.isdigit() and _parent(pid) == os.getpid() and b"\0-m\0gbls" in _cmdline(pid)
    ]
    assert server
    for pid in server:
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert "libtorch" not in maps


def _parent(pid: str) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


async def test_settings_change_applies_to_the_next_publication(client: LanguageClient) -> None:
    path = ENGINE / "explicit_break.py"
    (before,) = await open_and_wait(client, path)
    assert before.severity == lsp.DiagnosticSeverity.Warning
    client.set_configuration({"debounceMs": 200, "severity": "error"}, section="gbls")
    waiting = asyncio.ensure_future(diagnostics_for(client, uri_of(path)))
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    (after,) = await waiting
    assert after.severity == lsp.DiagnosticSeverity.Error
    # Removing the key brings the default back, not the last value.
    client.set_configuration({"debounceMs": 200}, section="gbls")
    waiting = asyncio.ensure_future(diagnostics_for(client, uri_of(path)))
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    (restored,) = await waiting
    assert restored.severity == lsp.DiagnosticSeverity.Warning
    await close(client, path)


async def test_restart_worker_command(client: LanguageClient) -> None:
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="gbls.restartWorker"))
    diagnostics = await open_and_wait(client, ENGINE / "dynamic_shapes.py")
    assert [d.code for d in diagnostics] == ["GB0036"]
    await close(client, ENGINE / "dynamic_shapes.py")


async def test_cancelling_the_progress_stops_the_analysis(client: LanguageClient) -> None:
    path = LSP / "slow.py"
    known = set(client.progress_reports)
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    seen = len(recorder.history)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri_of(path), "python", 1, path.read_text()))
    )
    (token,) = await until(lambda: set(client.progress_reports) - known)
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    await until(
        lambda: [getattr(v, "kind", None) for v in client.progress_reports[token]] == ["begin", "end"], 60
    )
    await asyncio.sleep(1.0)
    assert [u for u, _ in recorder.history[seen:] if u == uri_of(path)] == []  # cancelled: nothing published
    await close(client, path)


async def test_ranges_count_utf16_code_units(client: LanguageClient) -> None:
    path = ENGINE / "unicode_columns.py"
    (diagnostic,) = [d for d in await open_and_wait(client, path) if d.code == "GB0059"]
    # 23 characters precede the print, and 🚀 is two UTF-16 code units.
    assert diagnostic.range == lsp.Range(lsp.Position(5, 24), lsp.Position(5, 39))
    await close(client, path)


async def test_comment_and_blank_line_edits_publish_from_cache_with_shifted_ranges(
    client: LanguageClient,
) -> None:
    path = ENGINE / "branch_item.py"
    uri = uri_of(path)
    before = await open_and_wait(client, path)
    assert [(d.code, d.range.start.line) for d in before] == [("GB0170", 5), ("GB0124", 7)]
    analyses = len(client.progress_reports)
    text = path.read_text().replace(
        "@torch.compile\n", "# a comment, then a blank line\n\n@torch.compile\n", 1
    )
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [lsp.TextDocumentContentChangeWholeDocument(text)],
        )
    )
    after = await diagnostics_for(client, uri)  # from the cache: no analysis ran, as counted below
    assert [(d.code, d.range.start.line, d.range.start.character) for d in after] == [
        ("GB0170", 7, before[0].range.start.character),
        ("GB0124", 9, before[1].range.start.character),
    ]
    assert len(client.progress_reports) == analyses  # nothing was re-analysed
    await close(client, path)


async def raw_request(client: LanguageClient, method: str, params: dict[str, Any]) -> Any:
    """Send a request exactly as given (lsprotocol would refuse to build these params), and its answer."""
    protocol = client.protocol
    message_id = str(uuid.uuid4())
    future: Future[Any] = Future()
    protocol._request_futures[message_id] = future
    protocol._send_data(JsonRPCRequestMessage(id=message_id, method=method, jsonrpc="2.0", params=params))
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), 60)
    except JsonRpcException as error:
        return error


@pytest.mark.parametrize(
    ("line", "character"), [(-1, 0), (0, -1), (0, 2**31), (2**31, 0), (0, 2**53), (2**31 - 1, 2**31 - 1)]
)
async def test_hover_anywhere_is_answered(
    client: LanguageClient, main_py: list[lsp.Diagnostic], line: int, character: int
) -> None:
    """Positions outside the document, or outside what LSP allows: an answer (nothing, or an error)."""
    params = {
        "textDocument": {"uri": uri_of(LSP / "main.py")},
        "position": {"line": line, "character": character},
    }
    answer = await raw_request(client, "textDocument/hover", params)
    assert answer is None or isinstance(answer, JsonRpcException)
    # And the server goes on: a real hover right after is answered as usual.
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri_of(LSP / "main.py")), lsp.Position(8, 10))
    )
    assert hover is not None


async def test_an_untitled_document_gets_its_breaks(client: LanguageClient) -> None:
    """Its path (``Untitled-1``) has no URI of its own: the breaks go to the document's."""
    uri = "untitled:Untitled-1"
    text = (ENGINE / "print_body.py").read_text()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    diagnostics = await diagnostics_for(client, uri)
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("GB0059", 6)]
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    seen = len(recorder.history)
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert await published_after(client, seen, uri) == []  # no file: its diagnostics go with it


async def test_the_doctor_command_says_what_the_setup_gives(client: LanguageClient) -> None:
    """`gbls doctor` through the server, for the editor's output channel: the folder's, not a pop-up."""
    text = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="gbls.doctor"))
    assert isinstance(text, str)
    lines = text.splitlines()
    assert lines[1].startswith("interpreter: ") and lines[2].startswith("torch: 2.")
    assert any(line.startswith("sandbox: ") for line in lines)
    assert "cache: off (GBLS_NO_CACHE)" in lines  # the suite's environment turns it off
    assert lines[-1].startswith(f"runs: none configured in {FIXTURES} ")


class RawServer:
    """``gbls serve`` driven by hand over stdio: for traffic that a client library would not send
    (a late cancel) or would answer at once (the server's own requests)."""

    def __init__(self, folder: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gbls", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=folder,
        )
        self.read: list[dict[str, Any]] = []

    def send(self, payload: dict[str, object]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **payload}).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.process.stdin.flush()

    def until(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first message from the server (LSP framing: a body ends with no newline) that
        ``wanted`` takes, reading on until one comes."""
        stream = self.process.stdout
        assert stream is not None
        while True:
            for message in self.read:
                if wanted(message):
                    self.read.remove(message)
                    return message
            headers = b""
            while not headers.endswith(b"\r\n\r\n"):
                byte = stream.read(1)
                assert byte, "the server closed its output before it said what was waited for"
                headers += byte
            (length,) = re.findall(rb"Content-Length: (\d+)", headers)
            self.read.append(json.loads(stream.read(int(length))))

    def stop(self) -> bytes:
        """Shut down and exit; the server's stderr."""
        self.send({"id": "shutdown", "method": "shutdown", "params": None})
        self.until(lambda message: message.get("id") == "shutdown")  # every message before it was read
        assert self.process.stdin is not None
        self.send({"method": "exit", "params": None})
        _, stderr = self.process.communicate(timeout=60)
        return stderr


def test_a_late_cancel_is_no_error_on_stderr(tmp_path: Path) -> None:
    """VS Code cancels requests the server has answered already (a hover the user moved on from):
    ordinary traffic, which must not reach stderr, shown by clients as an error."""
    server = RawServer(tmp_path)
    server.send(
        {"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}}
    )
    server.send({"method": "initialized", "params": {}})
    # Once the worker is up, as an editor's session is when the user moves on from a hover.
    server.until(lambda message: "gbls worker ready" in json.dumps(message))
    server.send({"method": "$/cancelRequest", "params": {"id": 6}})
    assert b"Cancel notification" not in server.stop()


def test_an_analysis_replaced_while_the_client_makes_its_progress_is_no_error(tmp_path: Path) -> None:
    """An edit replaces the analysis whose progress the client is still creating: the client's
    answer, once it comes, is ordinary traffic, not an error on stderr."""
    text = (ENGINE / "clean.py").read_text()
    (tmp_path / "clean.py").write_text(text)
    uri = (tmp_path / "clean.py").as_uri()
    server = RawServer(tmp_path)
    capabilities = {"window": {"workDoneProgress": True}}
    initialize = {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": capabilities}
    server.send({"id": 1, "method": "initialize", "params": initialize})
    server.send({"method": "initialized", "params": {}})
    document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    creating = server.until(lambda message: message.get("method") == "window/workDoneProgress/create")
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text + "\nx = 1\n"}]}
    server.send({"method": "textDocument/didChange", "params": change})
    # The edit's analysis asks for progress of its own: the first one was given up by then.
    again = server.until(lambda message: message.get("method") == "window/workDoneProgress/create")
    server.send({"id": creating["id"], "result": None})
    server.send({"id": again["id"], "result": None})
    server.until(lambda message: message.get("method") == "textDocument/publishDiagnostics")
    stderr = server.stop()
    assert b"Unable to handle message" not in stderr and b"InvalidStateError" not in stderr, stderr

"""The LSP traffic of one editor session with the gbls server, recorded as a transcript, to show that a
change of the server's code changes none of what it says (a refactor): record it before and after,
then compare.

    python scripts/transcript.py before.json --checkout /path/to/the/old/checkout
    python scripts/transcript.py after.json
    python scripts/transcript.py --compare before.json after.json

The session is the end-to-end test's (vscode-extension/src/e2e/run.ts), driven step by step by a
client that declares what VS Code declares: the two-calls-deep ``preprocess.py`` opened, hovered
where it breaks, its quick fixes, code lenses, inlay hints and pulled diagnostics asked for; an edit
saved that adds a ``print`` and the same questions asked again; then the project, ``model.py`` (which
``train.py`` compiles) opened and asked the same. Each step waits for the server to settle: its
analysis published and its fixes proven, then a quiet second.

What the transcript keeps of each step: every answer to the client's requests, in order; of the
server's notifications, each document's last diagnostics and last ``gbls/status`` (how many interim
ones an analysis sends depends on the machine's speed), its log lines and its requests as sorted sets
— paths, durations and process ids written as placeholders.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "vscode-extension" / "fixtures"
QUIET = 1.0  # seconds without a message from the server that end a settled step
PATIENCE = 240.0  # seconds a step may wait for what it waits for

Message = dict[str, Any]


class Client:
    """A JSON-RPC client over the server's stdio that keeps every message the server sends."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.received: list[Message] = []
        self.answers: dict[int, Message] = {}
        self.last = time.monotonic()
        self.next_id = 0
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while True:
            header = await self.process.stdout.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"Content-Length: (\d+)", header).group(1))  # type: ignore[union-attr]
            message = json.loads(await self.process.stdout.readexactly(length))
            self.last = time.monotonic()
            if "method" in message and "id" in message:  # the server asks: answered as VS Code would
                self.received.append(message)
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": _answer(message)})
            elif "method" in message:
                self.received.append(message)
            else:
                self.answers[message["id"]] = message

    def _send(self, message: Message) -> None:
        assert self.process.stdin is not None
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        ident = self.next_id
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        await _until(lambda: ident in self.answers, f"the answer to {method}")
        answer = self.answers.pop(ident)
        return answer.get("result", answer.get("error"))

    async def settle(self, done: Any) -> None:
        """Until ``done()`` holds of what was received, and the server has been quiet a while."""
        try:
            await _until(done, "the server to settle")
        except TimeoutError:
            for message in self.received:
                print(json.dumps(message)[:300], file=sys.stderr)
            raise
        while time.monotonic() - self.last < QUIET:
            await asyncio.sleep(QUIET / 4)


def _answer(request: Message) -> Any:
    if request["method"] == "workspace/configuration":
        return [None for _ in request["params"]["items"]]  # nothing configured
    return None


async def _until(done: Any, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} in {PATIENCE:.0f} s")
        await asyncio.sleep(0.1)


CAPABILITIES = {
    "workspace": {
        "configuration": True,
        "workspaceFolders": True,
        "didChangeWatchedFiles": {"dynamicRegistration": True, "relativePatternSupport": True},
        "codeLens": {"refreshSupport": True},
        "inlayHint": {"refreshSupport": True},
        "diagnostics": {"refreshSupport": True},
        "workspaceEdit": {"documentChanges": True, "changeAnnotationSupport": {"groupsOnLabel": True}},
    },
    "textDocument": {
        "synchronization": {"didSave": True, "dynamicRegistration": True},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "codeAction": {
            "codeActionLiteralSupport": {
                "codeActionKind": {"valueSet": ["", "quickfix", "refactor", "source", "source.fixAll"]}
            },
            "isPreferredSupport": True,
            "dataSupport": True,
            "resolveSupport": {"properties": ["edit"]},
        },
        "codeLens": {},
        "inlayHint": {},
        "diagnostic": {"relatedDocumentSupport": False},
        "publishDiagnostics": {
            "relatedInformation": True,
            "tagSupport": {"valueSet": [1, 2]},
            "codeDescriptionSupport": True,
            "dataSupport": True,
        },
    },
    "window": {"workDoneProgress": True, "showDocument": {"support": True}},
}


async def record(checkout: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="gbls-transcript-") as temporary:
        root = Path(temporary).resolve()
        workspace, project = root / "workspace", root / "project"
        shutil.copytree(FIXTURES / "workspace", workspace)
        shutil.copytree(FIXTURES / "project", project)
        environment = {
            **os.environ,
            "PYTHONPATH": str(checkout),
            "GBLS_CACHE_DIR": str(root / "cache"),  # cold, as each recording must be alike
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gbls",
            cwd=checkout,
            env=environment,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        client = Client(process)
        steps = await session(client, workspace, project)
        await client.request("shutdown", None)
        client.notify("exit", None)
        await asyncio.wait_for(process.wait(), PATIENCE)
        client.reader.cancel()
        text = json.dumps(steps, indent=1, sort_keys=True)
        text = text.replace(root.as_uri(), "<root>").replace(str(root), "<root>")
        out.write_text(_timeless(text))


async def session(client: Client, workspace: Path, project: Path) -> list[Message]:
    steps: list[Message] = []
    start = len(client.received)
    folders = [{"uri": folder.as_uri(), "name": folder.name} for folder in (workspace, project)]
    answers = [
        await client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": workspace.as_uri(),
                "capabilities": CAPABILITIES,
                "workspaceFolders": folders,
                "initializationOptions": {},
            },
        )
    ]
    client.notify("initialized", {})
    await client.settle(lambda: True)
    steps.append(_step("initialize", client, start, answers))

    preprocess = workspace / "preprocess.py"
    steps.append(await _open(client, preprocess, 'print("normalizing"'))
    text = preprocess.read_text()

    edited = text.replace("    return z.cos()", '    print("done")\n    return z.cos()')
    preprocess.write_text(edited)
    start = len(client.received)
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": preprocess.as_uri(), "version": 2},
            "contentChanges": [{"text": edited}],
        },
    )
    client.notify("textDocument/didSave", {"textDocument": {"uri": preprocess.as_uri()}})
    await client.settle(_proven(client, start, preprocess))
    steps.append(await _ask("save preprocess.py", client, start, preprocess, edited, 'print("done")'))

    steps.append(await _open(client, project / "model.py", 'print("mean activation:"', "train.py"))
    return steps


async def _open(client: Client, path: Path, at: str, analysed: str = "") -> Message:
    """The step that opens ``path`` and asks of it at the line holding ``at`` (``analysed``: the file
    whose analysis reaches it, if not its own)."""
    text = path.read_text()
    start = len(client.received)
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}},
    )
    await client.settle(_proven(client, start, path, analysed))
    return await _ask(f"open {path.name}", client, start, path, text, at)


def _proven(client: Client, start: int, path: Path, analysed: str = "") -> Any:
    """Whether the document's analysis is done and the fixes of the analysis that reached it proven
    (``analysed``: that analysis's file, if not the document: model.py's is train.py's) since message
    ``start``."""

    def done() -> bool:
        received = client.received[start:]
        finished = any(
            m["method"] == "gbls/status"
            and m["params"]["uri"] == path.as_uri()
            and m["params"]["state"] == "done"
            for m in received
        )
        line = re.compile(rf"proved \d+ of \d+ fixes in {re.escape(analysed or path.name)}$")
        proved = any(
            m["method"] == "window/logMessage" and line.match(m["params"]["message"]) for m in received
        )
        return finished and proved

    return done


async def _ask(name: str, client: Client, start: int, path: Path, text: str, at: str) -> Message:
    """What an editor asks of an analysed document: its diagnostics (pulled, as VS Code does), the
    hover where it breaks, the quick fixes there (the first resolved), fix all, the lenses, the inlay
    hints."""
    uri = {"uri": path.as_uri()}
    line = next(number for number, content in enumerate(text.splitlines()) if at in content)
    character = text.splitlines()[line].index(at)
    position = {"line": line, "character": character}
    pulled = await client.request("textDocument/diagnostic", {"textDocument": uri})
    answers = [
        pulled,
        await client.request("textDocument/hover", {"textDocument": uri, "position": position}),
    ]
    here = [d for d in pulled["items"] if d["range"]["start"]["line"] == line]
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": len(text.splitlines()), "character": 0}}
    actions = await client.request(
        "textDocument/codeAction",
        {
            "textDocument": uri,
            "range": here[0]["range"] if here else {"start": position, "end": position},
            "context": {"diagnostics": here, "triggerKind": 1},
        },
    )
    answers.append(actions)
    resolvable = [a for a in actions or [] if "edit" not in a and "data" in a]
    if resolvable:
        answers.append(await client.request("codeAction/resolve", resolvable[0]))
    answers.append(
        await client.request(
            "textDocument/codeAction",
            {"textDocument": uri, "range": whole, "context": {"diagnostics": [], "only": ["source.fixAll"]}},
        )
    )
    answers.append(await client.request("textDocument/codeLens", {"textDocument": uri}))
    answers.append(await client.request("textDocument/inlayHint", {"textDocument": uri, "range": whole}))
    await client.settle(lambda: True)
    return _step(name, client, start, answers)


def _step(name: str, client: Client, start: int, answers: list[Any]) -> Message:
    last: dict[str, Any] = {}
    logged: set[str] = set()
    asked: set[str] = set()
    progress: set[str] = set()
    for message in client.received[start:]:
        method, params = message["method"], message.get("params") or {}
        if method in ("textDocument/publishDiagnostics", "gbls/status"):
            last[f"{method} {params.get('uri', '')}"] = params
        elif method == "window/logMessage":
            logged.add(params["message"])
        elif method == "$/progress":
            value = params["value"]
            progress.add(f"{value['kind']}: {value.get('title', '')}")
        elif "id" in message:
            asked.add(json.dumps({"method": method, "params": params}, sort_keys=True))
        else:
            last[method] = params
    return {
        "step": name,
        "answers": answers,
        "last": last,
        "logged": sorted(logged),
        "asked": sorted(asked),
        "progress": sorted(progress),
    }


def _timeless(text: str) -> str:
    """``text`` without what differs from run to run: durations, process ids, tokens, result ids."""
    text = re.sub(r"\b\d+(\.\d+)?\s?(ms|s)\b", "<time>", text)
    text = re.sub(r"\b(pid|process) \d+", r"\1 <pid>", text)
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<token>", text)
    return re.sub(r'"resultId": "[^"]*"', '"resultId": "<result>"', text)


def compare(before: Path, after: Path) -> int:
    old, new = json.loads(before.read_text()), json.loads(after.read_text())
    differences = 0
    for a, b in zip(old, new, strict=False):
        for field in a:
            if a[field] != b.get(field):
                differences += 1
                print(f"{a['step']}: {field} differs")
    if len(old) != len(new):
        differences += 1
        print(f"{len(old)} steps before, {len(new)} after")
    print("the same traffic" if not differences else f"{differences} differences")
    return 1 if differences else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?", help="where to write the transcript")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the gbls whose server to run")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    arguments = parser.parse_args()
    if arguments.compare:
        return compare(*arguments.compare)
    if arguments.out is None:
        parser.error("where to write the transcript: OUT")
    asyncio.run(record(arguments.checkout.resolve(), arguments.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

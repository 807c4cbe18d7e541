"""The editor on real projects, over LSP with the real server: every break in the file where it is,
fresh after every save, whatever file is open.

Three workspace folders, each a copy of a fixture project: ``twofile`` (no run configured: its
``train.py`` imports ``model.py`` and compiles the model), ``edited`` and ``fixed`` (other copies of it,
the ones tests edit: the tests run in any order) and ``trainer`` (a run configured in its pyproject.toml, with
flags, a config and data read relative to the folder).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
import torch
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from gbls.lsp.markdown import prose

from ..support import FIXTURES
from ..support.lsp import (
    Recorder,
    initialized,
    open_and_wait,
    published_after,
    server,
    session,
    until,
    uri_of,
)

PROJECTS = FIXTURES / "runs"
# Workspace folder: fixture. "fresh" is opened by one test only: what a file shows from the start.
FOLDERS = {
    "twofile": "twofile",
    "edited": "twofile",
    "trainer": "trainer",
    "fresh": "twofile",
    "fixed": "twofile",
}


@pytest.fixture(scope="session")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("projects")
    for name, fixture in FOLDERS.items():
        shutil.copytree(PROJECTS / fixture, folder / name)
    (folder / "trainer" / "data").mkdir()
    data = torch.randn(4, 2, 8, generator=torch.Generator().manual_seed(0))
    torch.save(data, folder / "trainer" / "data" / "train.pt")
    return folder


@pytest_lsp.fixture(scope="session", config=server())
async def client(lsp_client: LanguageClient, projects: Path) -> AsyncIterator[LanguageClient]:
    settings = {"timeout": 60, "debounceMs": 100}
    folders = {name: projects / name for name in FOLDERS}
    async with session(initialized(lsp_client, folders, settings, settings)) as client:
        yield client


def breaks_in(diagnostics: Sequence[lsp.Diagnostic]) -> list[tuple[int, str]]:
    """(line, code) of each break diagnostic, 1-based lines."""
    return sorted(
        (d.range.start.line + 1, str(d.code))
        for d in diagnostics
        if isinstance(d.data, dict) and d.data.get("kind") == "break"
    )


async def model_shows_its_breaks(client: LanguageClient, model: Path) -> None:
    """Open a copy of the fixture's model.py and wait for its print and .item() (from train.py)."""
    await open_and_wait(client, model)
    await breaks_published(client, uri_of(model), [(13, "GB0059"), (14, "GB0124")])


async def breaks_published(client: LanguageClient, uri: str, expected: list[tuple[int, str]]) -> None:
    """Wait until the last publication for ``uri`` holds exactly the breaks ``expected``."""
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]

    def last() -> bool:
        mine = [diagnostics for published, diagnostics in recorder.history if published == uri]
        return bool(mine) and breaks_in(list(mine[-1])) == expected

    await until(last, 180)


async def test_a_model_file_gets_its_breaks_from_the_file_that_compiles_it(
    client: LanguageClient, projects: Path
) -> None:
    model = projects / "twofile" / "model.py"
    # train.py, never opened, imports the model and compiles it: it is analysed in the background.
    await model_shows_its_breaks(client, model)
    diagnostics = client.diagnostics[uri_of(model)]
    (printed,) = [d for d in diagnostics if d.code == "GB0059"]
    assert printed.severity == lsp.DiagnosticSeverity.Warning
    assert printed.range.start.character == 8  # `print`, where the cause is
    related = {info.message for info in printed.related_information or []}
    assert any("called here" in message for message in related)  # the line of train.py that runs it
    statuses: list[Any] = client.statuses  # type: ignore[attr-defined]

    def last_done() -> Any:
        done = [s for s in statuses if s["uri"] == uri_of(model) and s["state"] == "done"]
        return done and done[-1]["breaks"] == 2 and done[-1]

    # The status follows the diagnostics: the client may not have read it yet.
    assert not (await until(last_done))["message"]


async def test_fixing_and_saving_the_model_clears_what_every_file_showed(
    client: LanguageClient, projects: Path
) -> None:
    model = projects / "edited" / "model.py"
    await model_shows_its_breaks(client, model)
    fixed = (
        model.read_text()
        .replace('        print("hidden norm", h.norm())\n', "")
        .replace("scale = h.abs().max().item()", "scale = h.abs().max()")
    )
    model.write_text(fixed)
    uri = uri_of(model)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [lsp.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri=uri)))
    await breaks_published(client, uri, [])
    # train.py's view holds no break either: the analysis that executed model.py ran again.
    train = list(client.diagnostics.get(uri_of(projects / "edited" / "train.py"), []))
    assert breaks_in(train) == []


async def test_a_configured_run_reaches_the_model_file_with_its_flags_and_data(
    client: LanguageClient, projects: Path
) -> None:
    model = projects / "trainer" / "model.py"
    await model_shows_its_breaks(client, model)
    assert not (projects / "trainer" / "out").exists()  # it saved its checkpoint in a layer


async def test_a_file_nothing_compiles_is_not_analysed_never_clean(
    client: LanguageClient, projects: Path
) -> None:
    lonely = projects / "twofile" / "lonely.py"
    lonely.write_text("def helper(x):\n    return x + 1\n")
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    seen = len(recorder.history)
    await open_and_wait(client, lonely)
    await published_after(client, seen, uri_of(lonely))
    statuses: list[Any] = client.statuses  # type: ignore[attr-defined]

    def said() -> str:
        done = [s for s in statuses if s["uri"] == uri_of(lonely) and s["state"] == "done"]
        return str(done[-1]["message"]) if done else ""

    message = await until(said)
    assert message.startswith("nothing compiles this file")


async def done_status(client: LanguageClient, uri: str) -> Any:
    """The last "done" status of ``uri`` once its file's view has its breaks."""
    statuses: list[Any] = client.statuses  # type: ignore[attr-defined]

    def last() -> Any:
        done = [s for s in statuses if s["uri"] == uri and s["state"] == "done"]
        return done and (done[-1]["breaks"] or done[-1]["elsewhere"]) and done[-1]

    return await until(last, 180)


async def test_the_compile_site_and_the_model_file_tell_one_story(
    client: LanguageClient, projects: Path
) -> None:
    """train.py compiles TinyNet, whose two breaks are in model.py: its status says where they are,
    as its lens counts them; model.py's says two; the log line of model.py's own analysis does not
    say "0 graph breaks"."""
    model, train = projects / "twofile" / "model.py", projects / "twofile" / "train.py"
    seen = len(client.log_messages)
    await model_shows_its_breaks(client, model)
    await open_and_wait(client, train)
    status = await done_status(client, uri_of(train))
    elsewhere = [(e.function, e.breaks, e.files) for e in status["elsewhere"]]
    assert (status["breaks"], elsewhere) == (0, [("TinyNet", 2, ["model.py"])])
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri_of(train)))
    )
    titles = [lens.command.title for lens in lenses or [] if lens.command]
    assert len(titles) == 1 and " · 2 breaks · " in titles[0], titles
    assert (await done_status(client, uri_of(model)))["breaks"] == 2
    logged = [m.message for m in client.log_messages[seen:] if m.message.startswith("analysed model.py")]
    assert logged and all("it compiles nothing itself" in line for line in logged), logged
    assert any(
        m.message.startswith("analysed train.py") and ": 2 graph breaks, " in m.message
        for m in client.log_messages[seen:]
    )
    # The hover on the print in model.py tells how TinyNet, compiled in train.py, splits there.
    line = next(n for n, text in enumerate(model.read_text().splitlines()) if "print(" in text)
    column = model.read_text().splitlines()[line].index("print")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri_of(model)), lsp.Position(line, column))
    )
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "**How `TinyNet` splits**: graph 1" in hover.contents.value, hover.contents.value


async def test_the_break_report_of_the_model_file_lists_its_breaks(
    client: LanguageClient, projects: Path
) -> None:
    model = projects / "twofile" / "model.py"
    await model_shows_its_breaks(client, model)
    report = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams("gbls.showReport", [uri_of(model)])
    )
    assert isinstance(report, str)
    headings = [line for line in report.splitlines() if line.startswith("#")]
    # The breaks costliest first: the order is the engine's (tests/engine/test_triage.py).
    assert headings[:2] == ["# gbls report: model.py", "## TinyNet"]
    assert sorted(headings[2:]) == [
        "### line 13: Failed to trace builtin operator (print)",
        "### line 14: Unsupported Tensor.item() call with capture_scalar_outputs=False (h.abs().max().item)",
    ]
    assert "Compiled at train.py:9." in report
    paragraphs = [part for part in report.split("\n\n") if part.strip()]
    # Said again only where each break has its own: its chain, how the function splits, why it has
    # no quick fix (none proven yet, for each, while the proofs run).
    assert len(paragraphs) == len(set(paragraphs)) or all(
        p.startswith(("**Chain:**", "**How", "No quick fix:")) for p in paragraphs if paragraphs.count(p) > 1
    )


async def test_fix_all_in_the_model_file_takes_the_flag_the_compile_site_needs(
    client: LanguageClient, projects: Path
) -> None:
    """The .item() in model.py has a safe fix, the flag in train.py that compiles it: fix all,
    asked in model.py, offers it (the print's removal is unsafe: not taken)."""
    model, train = projects / "twofile" / "model.py", projects / "twofile" / "train.py"
    await model_shows_its_breaks(client, model)
    found = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri_of(model)),
            lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
            lsp.CodeActionContext(diagnostics=[], only=["source.fixAll"]),
        )
    )
    (action,) = found or []
    assert isinstance(action, lsp.CodeAction) and action.kind == "source.fixAll.gbls"
    assert action.edit is not None
    if action.edit.document_changes:  # train.py not open (another test may have opened it): annotated
        (changed,) = action.edit.document_changes
        assert isinstance(changed, lsp.TextDocumentEdit) and changed.text_document.uri == uri_of(train)
        assert action.title.endswith("changing train.py (not open)")
        edits = list(changed.edits)
    else:
        assert action.edit.changes is not None and list(action.edit.changes) == [uri_of(train)]
        edits = list(action.edit.changes[uri_of(train)])
    (edit,) = edits
    assert (
        isinstance(edit, (lsp.TextEdit, lsp.AnnotatedTextEdit))
        and edit.new_text == "torch._dynamo.config.capture_scalar_outputs = True\n"
    )


async def test_nothing_stale_is_shown_as_current(client: LanguageClient, projects: Path) -> None:
    """model.py is never "not analysed" while train.py, which compiles it, is found and analysed; and
    after a save, while train.py runs again, model.py shows its two breaks marked as being re-checked,
    never another count."""
    model, train = projects / "fresh" / "model.py", projects / "fresh" / "train.py"
    statuses: list[Any] = client.statuses  # type: ignore[attr-defined]
    await model_shows_its_breaks(client, model)
    await open_and_wait(client, train)
    await done_status(client, uri_of(train))
    mine = [s for s in statuses if s["uri"] == uri_of(model)]
    assert [s["message"] for s in mine if s["state"] == "done" and s["message"]] == []
    seen = len(statuses)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri_of(model))))

    def settled() -> list[Any] | None:
        after = [s for s in statuses[seen:] if s["uri"] == uri_of(model) and s["state"] == "done"]
        return after if after and not after[-1]["rechecking"] and len(after) > 1 else None

    after = await until(settled, 180)
    assert after[0]["rechecking"] and {s["breaks"] for s in after} == {2}


async def test_the_quick_fix_the_hover_and_fix_all_agree_on_the_model_file(
    client: LanguageClient, projects: Path
) -> None:
    """The .item() in model.py, compiled by train.py (never opened): the first quick fix, preferred,
    is the hover's "To do" and what fix all applies, in train.py, the file that compiles the model;
    fix all names train.py in its title, not open, and shows it once changed."""
    model, train = projects / "fixed" / "model.py", projects / "fixed" / "train.py"
    await model_shows_its_breaks(client, model)
    (item,) = [d for d in client.diagnostics[uri_of(model)] if d.code == "GB0124"]
    document = lsp.TextDocumentIdentifier(uri_of(model))
    found = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            document, item.range, lsp.CodeActionContext(diagnostics=[item], only=["quickfix"])
        )
    )
    fixes = [
        a
        for a in found or []
        if isinstance(a, lsp.CodeAction) and a.edit is not None and not a.title.startswith("Suppress")
    ]
    first = fixes[0]
    assert (first.title, first.is_preferred) == ("Enable torch._dynamo.config.capture_scalar_outputs", True)
    assert first.edit is not None and list(first.edit.changes or {}) == [uri_of(train)]
    hover = await client.text_document_hover_async(lsp.HoverParams(document, item.range.start))
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert hover.contents.value.startswith(f"**To do:** {prose(first.title)}. "), hover.contents.value
    every = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            document,
            lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
            lsp.CodeActionContext(diagnostics=[], only=["source.fixAll.gbls"]),
        )
    )
    (fix_all,) = every or []
    assert isinstance(fix_all, lsp.CodeAction)
    assert fix_all.title == "gbls: apply the safe fixes (as gbls check --fix), changing train.py (not open)"
    # The print's fixes are unsafe: fix all applies the .item()'s alone, asking before it changes
    # train.py (VS Code previews an edit that needs confirmation).
    assert fix_all.edit is not None and fix_all.edit.document_changes is not None
    (changed,) = fix_all.edit.document_changes
    assert isinstance(changed, lsp.TextDocumentEdit) and changed.text_document.uri == uri_of(train)
    assert [(e.range, getattr(e, "new_text", None)) for e in changed.edits] == [
        (e.range, e.new_text)
        for e in first.edit.changes[uri_of(train)]  # type: ignore[index]
    ]
    annotations = fix_all.edit.change_annotations or {}
    assert {getattr(e, "annotation_id", None) for e in changed.edits} == set(annotations)
    (annotation,) = annotations.values()
    assert annotation.needs_confirmation and "train.py, which is not open" in annotation.label

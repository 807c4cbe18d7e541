"""The persistent cache's entries (``gbls.engine.store``) and keys (``gbls.runtime.persistent``): reused
only while the executed files' code is the same, moved onto comment edits, written atomically, and
read as untrusted input (a corrupt or foreign entry is ignored with a note)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
from pathlib import Path

import pytest

from gbls.cli import _parser, cache_folder
from gbls.engine import store
from gbls.engine.model import BreakReport, FileReport, FunctionReport, Location
from gbls.engine.ranges import Span
from gbls.engine.sources import read_source
from gbls.runtime.persistent import Persistent
from gbls.settings import Settings
from gbls.worker.shared.protocol import Break, Frame, Function

MAIN = "from helper import log\n\n\ndef f(x):\n    log(x)\n    return x + 1\n"
HELPER = "def log(x):\n    print(x)\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / "helper.py").write_text(HELPER)
    return tmp_path


def report_of(project: Path) -> FileReport:
    """A break in ``f`` whose root cause, the print, is in helper.py, as an analysis reports it."""
    main, helper = str(project / "main.py"), str(project / "helper.py")
    chain = (Location(main, "f", Span(5, 4, 5, 10)), Location(helper, "log", Span(2, 4, 2, 9)))
    frames = (Frame(main, "f", 5, 4, 10), Frame(helper, "log", 2, 4, 9))
    cause = Break("f", "Failed to trace builtin operator", "GB0059", None, "", ("hint",), "", frames)
    brk = BreakReport(cause, helper, Span(2, 4, 2, 9), chain, "print", split=chain[0])
    function = FunctionReport(
        Function("f", "f", main, 4, analysed=True), main, 4, (), 1, 0, Span(4, 4, 4, 5), None, None
    )
    return FileReport(
        main, "ok", "", "", None, (function,), (brk,), (), "out\n", "2.13.0", 1.5, executed=(main, helper)
    )


def saved(project: Path, notes: list[str]) -> tuple[store.Store, str, FileReport]:
    cache = store.Store(str(project / ".gbls_cache"), notes.append)
    report = report_of(project)
    key = store.lookup(path=report.path)
    assert cache.save(key, "2.13.0", [report.path, *report.executed], report, read_source)
    return cache, key, report


def entry_file(project: Path, key: str) -> Path:
    return project / ".gbls_cache" / key[:2] / f"{key}.json"


def test_an_unchanged_project_gets_the_same_report_back(project: Path) -> None:
    notes: list[str] = []
    cache, key, report = saved(project, notes)
    hit = cache.load(key, report.path, read_source)
    assert hit is not None and hit.report == report and hit.torch == "2.13.0"
    assert (project / ".gbls_cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not notes


def test_a_comment_edit_in_an_executed_file_moves_its_lines(project: Path) -> None:
    notes: list[str] = []
    cache, key, report = saved(project, notes)
    (project / "helper.py").write_text("# logging\n\n" + HELPER.replace("print(x)", "print(x)  # why"))
    hit = cache.load(key, report.path, read_source)
    assert hit is not None
    (brk,) = hit.report.breaks
    assert (brk.span.line, brk.chain[-1].span.line, brk.chain[0].span.line) == (4, 4, 5)  # main.py stays
    assert hit.report.functions == report.functions
    assert not notes


@pytest.mark.parametrize("edited", ["main.py", "helper.py"])
def test_a_code_edit_in_an_executed_file_is_a_miss(project: Path, edited: str) -> None:
    notes: list[str] = []
    cache, key, report = saved(project, notes)
    path = project / edited
    path.write_text(path.read_text().replace("x", "y"))
    assert cache.load(key, report.path, read_source) is None
    assert not notes  # stale, not corrupt


def test_a_deleted_executed_file_is_a_miss(project: Path) -> None:
    cache, key, report = saved(project, [])
    (project / "helper.py").unlink()
    assert cache.load(key, report.path, read_source) is None


def test_no_entry_is_a_miss_without_a_note(project: Path) -> None:
    notes: list[str] = []
    cache = store.Store(str(project / ".gbls_cache"), notes.append)
    assert cache.load(store.lookup(path="x"), str(project / "main.py"), read_source) is None
    assert not notes


def _broken(data: dict[str, object]) -> list[tuple[str, str]]:
    """Entries that do not fit, each with what the note says of it."""
    report = data["report"]
    assert isinstance(report, dict)
    return [
        ("{not json", "not JSON"),
        ("[]", "cache format None"),
        (json.dumps({**data, "v": 99}), "cache format 99"),
        (json.dumps({**data, "key": "0" * 64}), "another analysis's"),
        (json.dumps({**data, "report": {**report, "breaks": "many"}}), "FileReport.breaks"),
        (json.dumps({**data, "report": {**report, "path": "/elsewhere.py"}}), "another file's"),
        (json.dumps({**data, "files": [{"path": 1, "code": "", "lines": []}]}), "StoredFile.path"),
        (json.dumps({**data, "torch": None}), "Stored.torch"),
        ("[" * 100000 + "]" * 100000, ""),
        ("\udcff", ""),
    ]


def test_a_corrupt_or_foreign_entry_is_ignored_with_a_note_then_written_again(project: Path) -> None:
    cache, key, report = saved(project, [])
    entry = entry_file(project, key)
    good = entry.read_text()
    for text, said in _broken(json.loads(good)):
        notes: list[str] = []
        cache = store.Store(str(project / ".gbls_cache"), notes.append)
        entry.write_text(text, errors="surrogateescape")
        assert cache.load(key, report.path, read_source) is None
        assert cache.load(key, report.path, read_source) is None
        assert len(notes) == 1 and str(entry) in notes[0] and said in notes[0], notes
    assert cache.save(key, "2.13.0", [report.path, *report.executed], report, read_source)
    hit = cache.load(key, report.path, read_source)
    assert hit is not None and hit.report == report


def test_token_lines_that_do_not_fit_the_file_are_corrupt(project: Path) -> None:
    _cache, key, report = saved(project, [])
    entry = entry_file(project, key)
    data = json.loads(entry.read_text())
    data["files"][0]["lines"] = data["files"][0]["lines"][:-1]
    entry.write_text(json.dumps(data))
    notes: list[str] = []
    assert store.Store(str(project / ".gbls_cache"), notes.append).load(key, report.path, read_source) is None
    assert len(notes) == 1 and "token lines" in notes[0]


def test_writes_are_atomic_and_leave_no_temporary_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cache, key, report = saved(project, [])
    entry = entry_file(project, key)
    before = entry.read_text()

    def fails(source: str, destination: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fails)
    notes: list[str] = []
    other = store.Store(str(project / ".gbls_cache"), notes.append)
    changed = dataclasses.replace(report, output="changed\n")
    assert not other.save(key, "2.13.0", [report.path], changed, read_source)
    assert entry.read_text() == before  # the old entry whole, no half of the new one
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".tmp-")]
    assert len(notes) == 1 and "disk full" in notes[0]


def test_concurrent_writers_and_readers_never_see_a_partial_entry(project: Path) -> None:
    notes: list[str] = []
    _cache, key, report = saved(project, notes)
    # A reader may come before the first writer: the entry saved first is one it can see.
    reports = [report, *(dataclasses.replace(report, output="x" * (n * 50000)) for n in range(1, 4))]
    files = [report.path, *report.executed]
    hits = []

    def write(found: FileReport) -> None:
        mine = store.Store(str(project / ".gbls_cache"), notes.append)
        for _ in range(10):
            mine.save(key, "2.13.0", files, found, read_source)

    def read() -> None:
        mine = store.Store(str(project / ".gbls_cache"), notes.append)
        for _ in range(40):
            hits.append(mine.load(key, report.path, read_source))

    threads = [threading.Thread(target=write, args=(r,)) for r in reports] + [
        threading.Thread(target=read) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not notes
    assert all(hit is not None and hit.report in reports for hit in hits)
    assert not [p for p in entry_file(project, key).parent.iterdir() if p.name.startswith(".tmp-")]


def test_a_file_that_does_not_tokenize_is_not_kept(project: Path) -> None:
    (project / "helper.py").write_text("def log(x:\n")
    cache = store.Store(str(project / ".gbls_cache"), lambda note: None)
    report = report_of(project)
    assert not cache.save(store.lookup(path=report.path), "", list(report.executed), report, read_source)


def test_the_key_covers_the_analysis_the_settings_and_the_environment(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, folder = str(project / "main.py"), str(project)
    key = Persistent.key(Settings(), main, folder, None)
    assert key is not None and key == Persistent.key(Settings(), main, folder, None)
    others = {
        Persistent.key(Settings(), str(project / "helper.py"), folder, None),
        Persistent.key(Settings(timeout=5), main, folder, None),
        Persistent.key(Settings(run_main=False), main, folder, None),
        Persistent.key(Settings(sandbox="off"), main, folder, None),
        Persistent.key(Settings(interpreter=sys.executable), main, folder, None),
    }
    monkeypatch.setenv("TORCHDYNAMO_SOMETHING", "1")  # passed on to the analysed code
    others.add(Persistent.key(Settings(), main, folder, None))
    assert key not in others and len(others) == 6
    monkeypatch.delenv("TORCHDYNAMO_SOMETHING")
    monkeypatch.setenv("GBLS_WORKER_LOG", "1")  # gbls's own log: the same analysis
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret")  # never passed on
    assert Persistent.key(Settings(), main, folder, None) == key
    assert Persistent.key(Settings(interpreter=str(project / "no-python")), main, folder, None) is None


def test_the_cache_folder_of_the_options_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GBLS_NO_CACHE", raising=False)
    monkeypatch.delenv("GBLS_CACHE_DIR", raising=False)

    def folder(*options: str) -> str | None:
        return cache_folder(_parser().parse_args(["check", *options, "x.py"]))

    assert folder() == str(tmp_path / ".gbls_cache")
    assert folder("--cache-dir", "elsewhere") == str(tmp_path / "elsewhere")
    assert folder("--no-cache") is None
    monkeypatch.setenv("GBLS_CACHE_DIR", str(tmp_path / "env"))
    assert folder() == str(tmp_path / "env")
    assert folder("--cache-dir", "elsewhere") == str(tmp_path / "elsewhere")
    monkeypatch.setenv("GBLS_NO_CACHE", "1")
    assert folder("--cache-dir", "elsewhere") is None

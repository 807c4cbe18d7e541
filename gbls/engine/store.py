"""The persistent cache: analyses kept on disk (``.gbls_cache/``), reused while nothing they depend on
changed, so that a second ``gbls check`` or a reopened editor costs no analysis.

An entry is found by its *lookup key*: everything known before the analysis runs that its result
depends on (what is analysed, the settings, the interpreter's environment, gbls's own code: see
``lookup``). It holds the report and the code key (``cache.code_key``) of every workspace file the
analysis executed; it is reused only when each of them still has that key, and then moved line by
line onto their texts, as a comment-only edit is in the editor.

Entries are data gbls wrote, read back as untrusted input: JSON, checked field by field as the
worker's wire format is (``protocol.from_dict``); one that does not fit is ignored with a note and
written again, never executed. Each is written to a temporary file beside it and renamed over it,
so that concurrent runs never read half an entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..worker.shared.protocol import ProtocolError, from_dict, to_dict
from .cache import code_key, line_map
from .model import FileReport
from .shifts import shifted_files
from .sources import TextOf

CACHE_VERSION = 2
FOLDER = ".gbls_cache"
# An entry past this size is no entry of gbls's: not read.
MAX_BYTES = 64 << 20
SUFFIX = ".json"
# A proof's verdict: a file of its own kind beside the analyses' entries.
VERDICT = ".verdict"


def lookup(**parts: Any) -> str:
    """The lookup key of an analysis: a digest of ``parts`` (JSON values), with the cache's version."""
    text = json.dumps({"cache": CACHE_VERSION, **parts}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def code_digest(tokens: object) -> str:
    return hashlib.sha256(repr(tokens).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class StoredFile:
    """A workspace file the analysis executed: its code key's digest, and the line of each token."""

    path: str
    code: str
    lines: tuple[int, ...]


@dataclass(frozen=True)
class Stored:
    """One entry, as it is on disk."""

    v: int
    key: str
    torch: str
    files: tuple[StoredFile, ...]
    report: FileReport


@dataclass(frozen=True)
class Hit:
    report: FileReport  # moved onto the files' current texts
    torch: str  # the version the analysing worker reported


def ensure_folder(folder: str) -> None:
    """Create the cache folder, git-ignored by a ``.gitignore`` inside it (as ruff's)."""
    os.makedirs(folder, exist_ok=True)
    ignore = os.path.join(folder, ".gitignore")
    if not os.path.exists(ignore):
        write_atomically(ignore, "# Automatically created by gbls.\n*\n")


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in its folder, renamed over it: a reader
    sees the old file or the new one, never a part."""
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def decode(text: str, key: str) -> Stored:
    """The entry ``text`` holds, checked field by field; ``ProtocolError`` if it is not one gbls wrote
    for ``key`` in this format."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise ProtocolError(f"not JSON: {error}") from None
    version = data.get("v") if isinstance(data, dict) else None
    if version != CACHE_VERSION:
        raise ProtocolError(f"cache format {version!r}, expected {CACHE_VERSION}")
    stored = from_dict(Stored, data)
    if stored.key != key:
        raise ProtocolError("the entry is another analysis's")
    return stored


def encode(key: str, torch: str, files: tuple[StoredFile, ...], report: FileReport) -> str:
    stored = Stored(CACHE_VERSION, key, torch, files, report)
    return json.dumps(to_dict(stored), separators=(",", ":"))


def moved(stored: Stored, text_of: TextOf) -> FileReport | None:
    """The entry's report moved onto the files' current texts; None if the code of one changed."""
    maps = {}
    for file in stored.files:
        current = code_key(text_of(file.path) or "") if os.path.isfile(file.path) else None
        if current is None or code_digest(current[0]) != file.code:
            return None
        if len(current[1]) != len(file.lines):
            raise ProtocolError(f"{file.path}: {len(file.lines)} token lines for {len(current[1])} tokens")
        maps[file.path] = line_map(file.lines, current[1])
    return shifted_files(stored.report, maps)


class Store:
    """The cache folder: entries by lookup key; what goes wrong with one is said through ``say``."""

    def __init__(self, folder: str, say: Callable[[str], None]) -> None:
        self.folder = os.path.abspath(folder)
        self.say = say
        self._said: set[str] = set()
        self._writable = True

    def _path(self, key: str, suffix: str = SUFFIX) -> str:
        return os.path.join(self.folder, key[:2], key + suffix)

    def _say_once(self, note: str) -> None:
        if note not in self._said:
            self._said.add(note)
            self.say(note)

    def load(self, key: str, path: str, text_of: TextOf) -> Hit | None:
        """The entry of ``key`` for the analysis of ``path``, when every file it executed has the same
        code; None if there is none, it is stale, or it does not fit (said once)."""
        entry = self._path(key)
        try:
            if os.path.getsize(entry) > MAX_BYTES:
                raise ProtocolError(f"over {MAX_BYTES} bytes")
            with open(entry, encoding="utf-8", errors="strict") as handle:
                stored = decode(handle.read(), key)
            if stored.report.path != path:
                raise ProtocolError("the entry is another file's")
            report = moved(stored, text_of)
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, ProtocolError, RecursionError) as error:
            self._say_once(f"ignoring the cache entry {entry}: {error}")
            return None
        return Hit(report, stored.torch) if report is not None else None

    def verdict(self, key: str) -> tuple[bool, str | None]:
        """The proof's verdict kept under ``key`` (``keep_verdict``): whether there is one, and it
        (None: proven; else why not)."""
        try:
            with open(self._path(key, VERDICT), encoding="utf-8") as handle:
                kept = json.loads(handle.read(4096))
            verdict = kept["verdict"]
        except (OSError, ValueError, KeyError, TypeError):
            return False, None
        return (True, verdict) if verdict is None or isinstance(verdict, str) else (False, None)

    def keep_verdict(self, key: str, verdict: str | None) -> None:
        """Keep a proof's verdict under ``key``, a digest of everything it was worked out from: a
        second check of unchanged code says what is fixable without starting a worker."""
        if not self._writable:
            return
        entry = self._path(key, VERDICT)
        try:
            ensure_folder(self.folder)
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            write_atomically(entry, json.dumps({"verdict": verdict}))
        except OSError as error:
            self._writable = False
            self._say_once(f"cannot write the cache in {self.folder}: {error}")

    def save(self, key: str, torch: str, files: list[str], report: FileReport, text_of: TextOf) -> bool:
        """Keep ``report`` under ``key``, with the code keys of ``files`` (the workspace files the
        analysis executed); False if one has none (it does not tokenize) or the folder is not writable."""
        stored = []
        for path in sorted(set(files)):
            found = code_key(text_of(path) or "") if os.path.isfile(path) else None
            if found is None:
                return False
            stored.append(StoredFile(path, code_digest(found[0]), found[1]))
        if not self._writable:
            return False
        entry = self._path(key)
        try:
            ensure_folder(self.folder)
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            write_atomically(entry, encode(key, torch, tuple(stored), report))
        except OSError as error:
            self._writable = False
            self._say_once(f"cannot write the cache in {self.folder}: {error}")
            return False
        return True

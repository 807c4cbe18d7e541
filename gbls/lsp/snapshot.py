"""A document as a request finds it, resolved once at the handler's edge (as ruff's server takes a
``DocumentSnapshot``): its path, folder, open text or notebook and its version, analysis key, and
what the session shows of the file (``Shown``: its view and the text it is in), passed down instead
of the URI, which every helper would work out again."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from pygls import uris

from ..engine.sources import read_source
from ..runtime.session import DocumentKey, Shown

if TYPE_CHECKING:
    from .features import GblsServer


@dataclass(frozen=True)
class Snapshot:
    uri: str
    key: DocumentKey  # the document's own analysis
    path: str
    folder: str  # the workspace folder the file is in
    # The open text document, or the open notebook as a program; None: not open. It is held, not
    # copied: its version after an analysis says whether the analysis is still of it.
    document: Any
    version: int | None  # the open document's, as resolved; None: not open
    source: str | None  # the open document's text (a notebook's program), as resolved; None: not open
    shown: Shown  # what the session shows of the file, and in which text


class Documents:
    """The open documents, and the files on disk, as the server sees them."""

    def __init__(self, ls: GblsServer) -> None:
        self._ls = ls
        # The files the user opened in this session: a file only an analysis in the background
        # reached (an importer gbls ran to reach another) shows its breaks, never its own failure.
        self.opened: set[str] = set()

    def open_document(self, uri: str) -> Any:
        """The open text document at ``uri``, or the open notebook as the program gbls analyses."""
        return self._ls.workspace.text_documents.get(unquote(uri)) or self._ls.notebooks.program(uri)

    def uri_of(self, path: str) -> str:
        """The URI of the file ``path``: an open document's own, an untitled one's too, whose path
        (``Untitled-1``, in the first workspace folder) has no URI of its own."""
        uri = uris.from_fs_path(path) or path
        if self.open_document(uri) is None:
            for other in list(self._ls.workspace.text_documents):
                if other.startswith("untitled:") and self.path_of(other) == path:
                    return str(other)
        return uri

    def path_of(self, uri: str) -> str:
        return self._path(uri, self.open_document(uri))

    def _path(self, uri: str, document: Any) -> str:
        path = document.path if document is not None else uris.to_fs_path(uri) or uri
        folders = self._ls.session.folders
        if uri.startswith("untitled:") and folders:
            # In the first workspace folder, where it runs as a file there would (not wherever the
            # server happens to run: that folder, unknown to the sandbox, is no place to start it).
            return os.path.join(folders[0], os.path.basename(path))
        return os.path.abspath(path)

    def text_of(self, path: str) -> str | None:
        document = self.open_document(self.uri_of(path))
        return document.source if document is not None else read_source(path)

    def snapshot(self, uri: str) -> Snapshot:
        document = self.open_document(uri)
        path = self._path(uri, document)
        version, source = (document.version, document.source) if document is not None else (None, None)
        folder, shown = self._ls.session.folder_of(path), self._ls.session.shown(path)
        return Snapshot(uri, DocumentKey(uri), path, folder, document, version, source, shown)

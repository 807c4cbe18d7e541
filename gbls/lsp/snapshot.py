"""A document as a request finds it, resolved once at the handler's edge (as ruff's server takes a
``DocumentSnapshot``): its path, folder, open text or notebook, analysis key and view, passed down
instead of the URI, which every helper would work out again."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from pygls import uris

from ..engine.model import FileView
from ..engine.sources import read_source
from ..runtime.session import Analysed, DocumentKey

if TYPE_CHECKING:
    from .features import GblsServer


@dataclass(frozen=True)
class Snapshot:
    uri: str
    key: DocumentKey  # the document's own analysis
    path: str
    folder: str  # the workspace folder the file is in
    document: Any  # the open text document, or the open notebook as a program; None: not open
    own: Analysed | None  # the document's own analysis's last result
    view: FileView | None  # what every analysis says of the file; None if none reached it
    text: str  # the text the view's positions are in
    # That text's version, where it is the document's own analysis's (else None: the file's text now).
    analysed_version: int | None

    @property
    def version(self) -> int | None:
        """The open document's version; None: not open."""
        return self.document.version if self.document is not None else None

    @property
    def source(self) -> str | None:
        """The open document's text (a notebook's program); None: not open."""
        return self.document.source if self.document is not None else None

    @property
    def cached(self) -> bool:
        """Whether it shows the persistent cache's result, its analysis not yet done."""
        return self.own is not None and self.own.cached


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
        session, key, document = self._ls.session, DocumentKey(uri), self.open_document(uri)
        path = self._path(uri, document)
        view, own = session.view(path), session.analysed_of(key)
        text, analysed_version = "", None
        if view is not None and own is not None and own.report.path == path:
            text, analysed_version = own.source, own.version
        elif view is not None:
            text = document.source if document is not None else self.text_of(path) or ""
        return Snapshot(uri, key, path, session.folder_of(path), document, own, view, text, analysed_version)

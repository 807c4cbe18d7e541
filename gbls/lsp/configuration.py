"""The client's settings, pulled (``workspace/configuration``): the workspace's, and each workspace
folder's own (a ``ConfigurationItem`` with its ``scope_uri``), the interpreter included: a Neovim user
with two folders of two projects gets each folder analysed by its own Python and torch. A folder
whose settings are the workspace's has none of its own."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls import uris

from ..runtime.session import DocumentKey
from ..settings import Settings, from_options

if TYPE_CHECKING:
    from .features import GblsServer

log = logging.getLogger(__name__)


async def pull(ls: GblsServer) -> None:
    """The client's settings, the workspace's and each folder's own; an open document whose settings
    changed (opened before they came: another folder's interpreter) is analysed again."""
    found = await pulled(ls)
    if found is None:
        return
    documents = ls.notebooks.documents()
    before = {uri: ls.session.settings_for(ls.documents.path_of(uri)) for uri in documents}
    apply(ls, *found)
    for uri, settings in before.items():
        if ls.session.settings_for(ls.documents.path_of(uri)) != settings:
            ls.analyses.request(ls.documents.snapshot(uri))


def apply(ls: GblsServer, settings: Settings, folders: dict[str, Settings] | None = None) -> None:
    """``folders``: the workspace folders' own settings (None: as they were)."""
    was_enabled = ls.settings.enable
    replaced = settings.worker_key() != ls.settings.worker_key()
    ls.session.workers.configure(settings, folders)
    if not settings.enable:
        ls.analyses.scheduler.cancel_all()
        ls.reaching.forget()
        for key, _ in list(ls.session.results()):
            if isinstance(key, DocumentKey):
                ls.analyses.forget(key)
        return
    if replaced or not was_enabled:
        ls.in_background(ls.warm())
    if not was_enabled:
        for uri in ls.notebooks.documents():
            ls.analyses.request(ls.documents.snapshot(uri))


async def pulled(ls: GblsServer) -> tuple[Settings, dict[str, Settings]] | None:
    """The workspace's settings and each folder's own; None when the client has none to give."""
    if not ls.capabilities.configuration:
        return None
    folders = ls.session.folders
    items = [lsp.ConfigurationItem(section="gbls")]
    items += [lsp.ConfigurationItem(scope_uri=uris.from_fs_path(f) or f, section="gbls") for f in folders]
    try:
        values = await ls.workspace_configuration_async(lsp.ConfigurationParams(items=items))
    except Exception as error:
        log.warning("workspace/configuration failed: %s", error)
        return None
    if not values:
        return None
    everywhere = from_options(values[0], ls.initial_settings)
    own = {}
    for folder, value in zip(folders, values[1:], strict=False):
        if value is None:  # the client has nothing for the folder: the workspace's hold there
            continue
        settings = from_options(value, ls.initial_settings)
        if settings != everywhere:
            own[folder] = settings
    return everywhere, own

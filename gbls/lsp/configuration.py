"""The client's settings, pulled (``workspace/configuration``): the workspace's, and each workspace
folder's own (a ``ConfigurationItem`` with its ``scope_uri``), the interpreter included: a Neovim user
with two folders of two projects gets each folder analysed by its own Python and torch. A folder
whose settings are the workspace's has none of its own."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from lsprotocol import types as lsp
from pygls import uris

from ..runtime.session import Session
from ..settings import Settings, from_options

log = logging.getLogger(__name__)


class Server(Protocol):
    """What pulling the settings needs of the server (``analyses.GblsServer``)."""

    session: Session
    initial_settings: Settings

    @property
    def client_capabilities(self) -> lsp.ClientCapabilities: ...

    async def workspace_configuration_async(
        self, params: lsp.ConfigurationParams
    ) -> Sequence[Any | None]: ...


async def pulled(ls: Server) -> tuple[Settings, dict[str, Settings]] | None:
    """The workspace's settings and each folder's own; None when the client has none to give."""
    workspace = ls.client_capabilities.workspace
    if workspace is None or not workspace.configuration:
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

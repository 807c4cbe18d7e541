"""What the client can do, read once from its ``initialize`` (as ruff's ``ResolvedClientCapabilities``):
the features ask a flag, never the capabilities' tree."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types as lsp


@dataclass(frozen=True)
class Capabilities:
    lens_refresh: bool = False  # workspace/codeLens/refresh
    inlay_refresh: bool = False  # workspace/inlayHint/refresh
    diagnostic_refresh: bool = False  # workspace/diagnostic/refresh: a client that pulls can be asked again
    watches_files: bool = False  # a didChangeWatchedFiles registered at run time
    configuration: bool = False  # workspace/configuration
    snippet_edits: bool = False  # a code action's edit may be a snippet
    change_annotations: bool = False  # an edit may ask for confirmation
    progress: bool = False  # window/workDoneProgress

    @classmethod
    def of(cls, client: lsp.ClientCapabilities) -> Capabilities:
        workspace = client.workspace or lsp.WorkspaceClientCapabilities()
        edits = workspace.workspace_edit
        return cls(
            lens_refresh=bool(workspace.code_lens and workspace.code_lens.refresh_support),
            inlay_refresh=bool(workspace.inlay_hint and workspace.inlay_hint.refresh_support),
            diagnostic_refresh=bool(workspace.diagnostics and workspace.diagnostics.refresh_support),
            watches_files=bool(
                workspace.did_change_watched_files and workspace.did_change_watched_files.dynamic_registration
            ),
            configuration=bool(workspace.configuration),
            snippet_edits=bool(edits and edits.snippet_edit_support),
            change_annotations=bool(edits and edits.change_annotation_support),
            progress=bool(client.window and client.window.work_done_progress),
        )

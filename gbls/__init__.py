"""gbls: the graph-break language server for torch.compile."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "assert_no_graph_breaks", "assert_no_recompiles"]

if TYPE_CHECKING:
    from .testing.checks import assert_no_graph_breaks, assert_no_recompiles


def __getattr__(name: str) -> Any:
    """The checks of a project's own tests (``gbls.testing``), imported when a test asks for them: they
    import torch, which the server and the CLI never do."""
    if name in ("assert_no_graph_breaks", "assert_no_recompiles"):
        from .testing import checks

        return getattr(checks, name)
    raise AttributeError(f"module 'gbls' has no attribute {name!r}")

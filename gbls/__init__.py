"""gbls: the graph-break language server for torch.compile."""

__version__ = "0.1.0"

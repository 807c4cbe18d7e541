"""The language server: one module per LSP feature, registered by ``server``."""

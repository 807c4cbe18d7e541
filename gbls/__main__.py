"""The ``gbls`` command (``python -m gbls``: with no arguments, the language server over stdio).
``gbls --version`` is answered here, before the CLI imports the engine, the fixes and jedi."""

from __future__ import annotations

import sys

from . import __version__


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:
        print(f"gbls {__version__}")
        return 0
    from .cli import main as command

    return command(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["serve"]))

"""``python -m gbls``: the language server over stdio; with arguments, the ``gbls`` command."""

import sys

from .cli import main

sys.exit(main(sys.argv[1:] or ["serve"]))

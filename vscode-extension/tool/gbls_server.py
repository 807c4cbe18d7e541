"""Start the gbls language server on stdio with the libraries bundled in the extension.

The extension runs this file with the user's interpreter, the one with torch. bundled/libs goes
first on sys.path of this process only (not PYTHONPATH): the worker that imports torch is another
process, so the bundled libraries never shadow the user's.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bundled", "libs"))

from gbls.lsp.server import serve  # noqa: E402

serve()

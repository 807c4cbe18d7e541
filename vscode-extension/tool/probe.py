"""Print what the extension must know about an interpreter before it starts gbls with it, as JSON.

torch's version comes from its metadata: importing torch would take seconds. debugpy is only looked
for, not imported: the extension needs it to start the server under a debugger (GBLS_DEBUG_PORT).
"""

import json
import sys
from importlib import metadata, util

try:
    torch = metadata.version("torch")
except metadata.PackageNotFoundError:
    torch = None

print(
    json.dumps(
        {
            "python": list(sys.version_info[:3]),
            "torch": torch,
            "executable": sys.executable,
            "debugpy": util.find_spec("debugpy") is not None,
        }
    )
)

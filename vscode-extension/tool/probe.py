"""Print what the extension must know about an interpreter before it starts gbls with it, as JSON.

torch's version comes from its metadata: importing torch would take seconds.
"""

import json
import sys
from importlib import metadata

try:
    torch = metadata.version("torch")
except metadata.PackageNotFoundError:
    torch = None

print(json.dumps({"python": list(sys.version_info[:3]), "torch": torch, "executable": sys.executable}))

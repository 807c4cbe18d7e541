"""The Python interpreters the analysed program starts (a rank ``torch.multiprocessing.spawn``
starts, a forkserver, ``subprocess`` running ``sys.executable``) get gbls's capture, as the
analysis has it: the no-op backend, and their breaks and compilations reported with the process
they came from. They inherit it through their environment: ``spawned/site`` first on
``PYTHONPATH`` and the analysis's settings in ``GBLS_SPAWNED``, set where processes inherit them
(the C environment) but not in the ``os.environ`` the analysed code reads; the hook takes both out
of each interpreter's ``os.environ`` again. A process started with an environment of the program's
own making (``env=``) runs as the program made it: without the capture.

They stay under the analysis's limits (rlimits are inherited, processes counted by descent) and
die with it (its process group, the worker's sweep).
"""

from __future__ import annotations

import json
import os
import sys

from ..shared.protocol import Request, to_dict
from ..shared.workspace import roots_of

WORKER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITE = os.path.join(WORKER_DIR, "spawned", "site")
MARKER = "GBLS_SPAWNED"


def events_folder(scratch: str) -> str:
    """Where the interpreters of the analysis with this scratch directory write their events: beside
    it, not in it (it is the program's working directory), and removed with it."""
    return scratch.rstrip(os.sep) + "-processes"


def arm(key: bytes, scratch: str, request: Request) -> str:
    """Set the environment the program's processes inherit; the folder their events go to."""
    folder = events_folder(scratch)
    os.makedirs(folder, mode=0o700)
    settings = {
        "key": key.hex(),
        "events": folder,
        "python": os.path.realpath(sys.executable),
        "prefix": sys.prefix,
        "worker": WORKER_DIR,
        "path": request.path,
        "roots": roots_of(request),
        "sites": [to_dict(site) for site in request.targets],  # a compile site they run is theirs
        "values": request.settings.values,
    }
    os.putenv(MARKER, json.dumps(settings))
    theirs = os.environ.get("PYTHONPATH", "")
    os.putenv("PYTHONPATH", os.pathsep.join([SITE, theirs]) if theirs else SITE)
    return folder

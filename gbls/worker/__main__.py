"""Start the warm worker in the user's interpreter, where gbls itself may not be installed.

This folder is loaded as a private package, ``_gbls_worker``, so that its modules never shadow
the user's modules nor are shadowed by them. It needs only the standard library and torch.
"""

import sys

# What a plain ``python file.py`` has imported before the file runs: a workspace file can shadow
# none of these, but can shadow anything the worker imports from here on (see ``analyse``).
startup = frozenset(sys.modules)

import importlib.util  # noqa: E402
import os  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
    del sys.path[0]
spec = importlib.util.spec_from_file_location(
    "_gbls_worker", os.path.join(here, "__init__.py"), submodule_search_locations=[here]
)
assert spec is not None and spec.loader is not None
package = importlib.util.module_from_spec(spec)
sys.modules["_gbls_worker"] = package
spec.loader.exec_module(package)

from _gbls_worker.supervisor.zygote import main  # noqa: E402

main(startup)

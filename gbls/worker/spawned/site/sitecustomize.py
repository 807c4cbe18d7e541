"""gbls's start-up hook for the Python interpreters an analysed program starts: a rank that
``torch.multiprocessing.spawn`` starts, a forkserver, ``subprocess`` running ``sys.executable``.

The analysis puts this folder first on ``PYTHONPATH``, and ``GBLS_SPAWNED`` beside it, in the
environment its processes inherit, not in the ``os.environ`` the analysed code reads. Python
imports this module as it starts; it takes both out of this interpreter's view (the processes this
one starts still inherit them), and in the analysis's own interpreter gives torch gbls's capture
once the program imports torch (the no-op backend, every break and compilation reported to the
analysis); then it imports the sitecustomize this interpreter would have imported without gbls.

Any Python that finds this folder runs it, whatever its version: the standard library only, and
annotations as strings.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MARKER = "GBLS_SPAWNED"


def _hide() -> "str | None":
    """Both variables out of ``os.environ``, this folder out of ``sys.path``, as the program has them
    without gbls; the processes this interpreter starts still inherit them. The marker, if set."""
    marker = os.environ.pop(MARKER, None)
    if marker is not None:
        os.putenv(MARKER, marker)
    python_path = os.environ.get("PYTHONPATH", "")
    theirs = [entry for entry in python_path.split(os.pathsep) if os.path.abspath(entry or ".") != HERE]
    if theirs:
        os.environ["PYTHONPATH"] = os.pathsep.join(theirs)
    else:
        os.environ.pop("PYTHONPATH", None)
    os.putenv("PYTHONPATH", python_path)
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != HERE]
    return marker


class _TorchWatch:
    """First on ``sys.meta_path``, waits for the program to import torch, then gives torch gbls's
    capture; it leaves ``sys.meta_path`` as torch is found."""

    def __init__(self, settings: "dict[str, str]") -> None:
        self.settings = settings

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # type: ignore[arg-type]
        import importlib.util

        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        settings = self.settings

        def exec_module(module: object) -> None:
            delattr(loader, "exec_module")  # the loader's own method again
            loader.exec_module(module)  # type: ignore[arg-type]
            _capture(settings)

        setattr(loader, "exec_module", exec_module)  # noqa: B010 - an instance's, for one call
        return spec


def _capture(settings: "dict[str, str]") -> None:
    """gbls's capture in this interpreter: the worker's modules as its private package, as the worker
    loads them, then ``spawned.child``'s capture. gbls's failure here is never the program's."""
    import importlib.util

    try:
        if "_gbls_worker" not in sys.modules:
            worker = settings["worker"]
            spec = importlib.util.spec_from_file_location(
                "_gbls_worker", os.path.join(worker, "__init__.py"), submodule_search_locations=[worker]
            )
            assert spec is not None and spec.loader is not None
            package = importlib.util.module_from_spec(spec)
            sys.modules["_gbls_worker"] = package
            spec.loader.exec_module(package)
        from _gbls_worker.spawned.child import start

        start(settings)
    except Exception as error:  # said only to whoever debugs gbls: the program's stderr is the program's
        if os.environ.get("GBLS_WORKER_LOG", "") not in ("", "0"):
            said = f"{type(error).__name__}: {error}"
            sys.stderr.write(f"gbls worker [{os.getpid()}]: no capture in this process: {said}\n")


def _their_sitecustomize() -> None:
    """The sitecustomize this interpreter imports without gbls (a distribution's, a virtual
    environment's), under its own name, as Python would have imported it."""
    del sys.modules["sitecustomize"]
    try:
        import sitecustomize  # type: ignore[import-not-found]  # noqa: F401
    except ImportError as error:
        if error.name != "sitecustomize":
            raise


def _start() -> None:
    marker = _hide()
    if marker is not None:
        import json

        settings = json.loads(marker)
        # Another interpreter (with its own torch, if any) runs as it would: the capture is for this one.
        if os.path.realpath(sys.executable) == settings["python"] and sys.prefix == settings["prefix"]:
            sys.meta_path.insert(0, _TorchWatch(settings))  # type: ignore[arg-type]
    _their_sitecustomize()


_start()

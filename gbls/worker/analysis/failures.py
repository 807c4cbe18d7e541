"""The ways an analysed program fails, said in words that tell what the sandbox had to do with it."""

from __future__ import annotations

import errno
import importlib.machinery
import io
import os
import re
import socket
import stat
import sys
import sysconfig
import tempfile
import tokenize
import traceback
from collections.abc import Callable

import torch
import torch._dynamo.eval_frame

from ..shared.events import FailureEvent
from ..shared.protocol import FailureKind

STDLIB_DIR = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep


def shadowed(folders: list[str], startup: frozenset[str], source: str) -> FailureEvent | None:
    """A workspace file that a plain ``python`` would import in place of a module torch (or gbls) had
    already imported here, before the analysed code ran: the analysis uses the real module."""
    suffixes = importlib.machinery.all_suffixes()
    found: list[tuple[str, str, str]] = []  # (name, the real module's file, the workspace file)
    listings = {}
    for folder in folders:
        try:
            listings[folder] = set(os.listdir(folder))
        except OSError:
            listings[folder] = set()
    for name, module in list(sys.modules.items()):
        if "." in name or name in startup or name.startswith("_gbls_worker") or module is None:
            continue
        real = os.path.realpath(getattr(module, "__file__", None) or "")
        for folder in folders:
            entries = listings[folder]
            candidates = [name + suffix for suffix in suffixes if name + suffix in entries]
            if name in entries and os.path.isfile(os.path.join(folder, name, "__init__.py")):
                candidates.insert(0, os.path.join(name, "__init__.py"))
            if candidates:
                shadow = os.path.join(folder, candidates[0])
                if os.path.realpath(shadow) != real:
                    found.append((name, real, shadow))
                break
    if not found:
        return None
    name, real, shadow = sorted(found)[0]
    owner = "the standard library's" if real.startswith(STDLIB_DIR) else "the installed"
    message = (
        f"{shadow} shadows {owner} module `{name}`, which torch imports: run with plain `python`, this "
        f"file would be imported in its place (and `import torch` would likely fail). gbls analysed the "
        f"file with the real `{name}`; rename {os.path.basename(shadow)} to run it as it is meant to"
    )
    others = sorted(os.path.basename(other) for _, _, other in found if other != shadow)
    if others:
        message += f" (also shadowing: {', '.join(others)})"
    importing = re.compile(rf"^\s*(import|from)\s+{re.escape(name)}\b", re.MULTILINE)
    at = importing.search(source)
    return FailureEvent(
        kind="shadow", message=message, line=source.count("\n", 0, at.start()) + 1 if at else None
    )


def disabled_by_environment() -> FailureEvent | None:
    if torch._dynamo.config.disable and os.environ.get("TORCH_COMPILE_DISABLE") == "1":
        return _disabled("TORCH_COMPILE_DISABLE=1 in the environment gbls runs in", None)
    return None


def disabled_by_module(source: str) -> FailureEvent | None:
    """Dynamo switched off by the analysed code: torch.compile then runs everything eagerly."""
    if torch._dynamo.config.disable:
        how, pattern = "torch._dynamo.config.disable = True", r"\bdisable\s*=\s*True"
    elif getattr(getattr(torch._dynamo.eval_frame, "_stance", None), "stance", "") == "force_eager":
        how, pattern = 'torch.compiler.set_stance("force_eager")', r"set_stance\("
    else:
        return None
    at = re.search(pattern, source)
    return _disabled(f"{how} in the analysed code", source.count("\n", 0, at.start()) + 1 if at else None)


def _disabled(how: str, line: int | None) -> FailureEvent:
    message = (
        f"Dynamo was disabled by {how}, so torch.compile compiled nothing: gbls cannot see the graph "
        "breaks of a file that runs eagerly"
    )
    return FailureEvent(kind="disabled", message=message, line=line)


SOURCE_LIMIT = 16 << 20


def encoding_failure(path: str) -> FailureEvent | None:
    """Python refuses to import a file that is not in its declared encoding (UTF-8 by default)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None  # deleted or unreadable: the buffer is all there is
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None  # a pipe or a device: never read, the buffer is all there is
        data = os.read(descriptor, SOURCE_LIMIT)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
        return None
    except SyntaxError as error:
        line, message = error.lineno or 1, str(error.msg)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        byte = f"byte 0x{data[error.start]:02x} on line {line}"
        message = (
            f"the file is not valid {error.encoding.upper()} ({byte}), so Python cannot import it; "
            "save it as UTF-8 or declare its encoding (PEP 263)"
        )
    return FailureEvent(kind="syntax", message=message, line=line)


def explain(error: BaseException, memory_mb: int, offline: bool, folder: str = "") -> tuple[FailureKind, str]:
    """What kind of failure ``error`` is, in words that say what the sandbox had to do with it;
    ``folder``: the analysed file's, for a relative path it did not find."""
    described = describe_error(error)
    causes = _causes(error)
    if isinstance(error, EOFError):
        return "stdin", f"read from stdin (input()), which is closed during analysis ({described})"
    for cause in causes:
        if isinstance(cause, MemoryError) or "can't allocate memory" in str(cause):
            asked = re.search(r"tried to allocate (\d+) bytes", str(cause))
            size = f" allocating {int(asked.group(1)) / 2**30:.1f} GB" if asked else ""
            return "memory", f"ran out of memory (limit {memory_mb} MB){size}"
    if isinstance(error, ImportError):
        return "import", described
    for cause in causes:
        if not isinstance(cause, OSError):
            continue
        if offline and _is_network(cause):
            return "network", _network_message(cause)
        if cause.errno == errno.EROFS:
            return "write", (
                "writing outside the scratch directory (tempfile.gettempdir()) is refused in the gbls "
                f"sandbox ({describe_error(cause)})"
            )
        if folder and cause.errno == errno.ENOENT and _relative(cause.filename):
            return "raised", f"{described}{_elsewhere(str(cause.filename), folder)}"
    return "raised", described


def _relative(name: object) -> bool:
    return isinstance(name, str) and bool(name) and not os.path.isabs(name)


def _elsewhere(name: str, folder: str) -> str:
    """Where a relative path was looked for: the folder the file runs from, as ``python FILE`` started
    there (or, without a layer to write in, its scratch directory)."""
    found = f"; {name} is in {folder}" if os.path.exists(os.path.join(folder, name)) else ""
    if os.getcwd() == tempfile.gettempdir():
        return (
            f" (a relative path: gbls ran the file in a scratch directory of its own, not in the folder "
            f"you run it from{found}: open it relative to the file, `Path(__file__).parent / ...`)"
        )
    return f" (a relative path, looked up in {os.getcwd()}, where gbls runs the file from{found})"


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and what lies behind it: its cause or context, a URLError's reason."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in found:
        found.append(current)
        reason = getattr(current, "reason", None)
        if isinstance(reason, BaseException):
            found.append(reason)
        current = current.__cause__ or current.__context__
    return found


def _is_network(error: OSError) -> bool:
    if isinstance(error, socket.gaierror):
        return True
    return error.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED, errno.EADDRNOTAVAIL)


def _network_message(error: OSError) -> str:
    if error.errno == errno.ECONNREFUSED:  # only the loopback answers, and it is the analysis's own
        return (
            "nothing listens there in the gbls sandbox: the analysis has a loopback (127.0.0.1) of its "
            f"own, without this machine's services ({describe_error(error)})"
        )
    return f"network access is blocked in the gbls sandbox ({describe_error(error)})"


def failure_at(
    kind: FailureKind, message: str, error: BaseException, own: Callable[[str], bool]
) -> FailureEvent:
    """The failure at the innermost line of the program's own files (``own``) in the error's traceback."""
    path, line = "", None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if own(frame.f_code.co_filename):
            path, line = frame.f_code.co_filename, lineno
    if isinstance(error, SyntaxError) and error.filename and own(error.filename):
        path, line = error.filename, error.lineno  # the file that does not parse is where it failed
    return FailureEvent(kind=kind, message=message, line=line, path=path)


def exit_failure(error: SystemExit, own: Callable[[str], bool]) -> FailureEvent | None:
    """A program that exits with status 0 (``sys.exit()``, ``sys.exit(0)``, a click command) succeeded;
    any other status is said as the program's exit status."""
    code = error.code
    if code is None or code is False or code == 0:
        return None
    # sys.exit(True) exits with 1 (unittest.main() when a test failed); sys.exit("message") prints
    # the message and exits with 1.
    status = int(code) if isinstance(code, int) else 1
    said = f": {code}" if isinstance(code, str) else ""
    for frame, _ in traceback.walk_tb(error.__traceback__):
        # argparse printed its usage and this message to stderr before it exited.
        if frame.f_code.co_name == "error" and frame.f_code.co_filename.endswith("argparse.py"):
            said = f": {frame.f_locals.get('message', '')} (argparse; usage in the output)"
    return failure_at("exit", f"the program exited with status {status}{said}", error, own)


def describe_error(error: BaseException) -> str:
    if type(error).__name__ == "TorchRuntimeError":
        # Dynamo ran the graph on fake tensors and the shapes did not fit: the inputs are wrong.
        found = re.search(r"""got \w+\((['"])(.*?)\1\)""", str(error))
        # torch 2.6 gives the message on the line after "Failed running …:", not as got Error('…').
        older = re.search(r"^Failed running [^\n]*:\n(.+?)\.?\n", str(error), re.M)
        detail = found.group(2) if found else older.group(1) if older else "the shapes do not fit the code"
        return f"inputs invalid: {detail}"
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__

"""gbls's own failures that users should see as such: the worker cannot start or the sandbox is refused.

Anything else raised while gbls works is a bug in gbls: callers log it with its traceback and
show it as gbls's own failure, never as one of these.
"""


class WorkerError(Exception):
    """The worker could not be started (no such interpreter, no torch, it died while starting)."""


class SandboxError(WorkerError):
    """The settings require bubblewrap, and it is missing or does not work here."""

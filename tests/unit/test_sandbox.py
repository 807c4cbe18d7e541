"""The sandbox's environment filter, without starting anything: what the analysed code's
environment keeps of the server's."""

from __future__ import annotations

from gbls.runtime.sandbox import worker_environment

from ..support import SECRETS


def test_environment_filter() -> None:
    base = {**SECRETS, "PATH": "/bin", "HOME": "/home/u", "PYTHONPATH": "/lib", "LC_ALL": "C", "EDITOR": "vi"}
    environment = worker_environment(base)
    assert environment["PYTHONPATH"] == "/lib"  # the workspace comes per analysis, after the imports
    assert environment["CUDA_VISIBLE_DEVICES"] == ""
    assert {"PATH", "HOME", "LC_ALL"} <= set(environment)
    assert not ({"EDITOR", *SECRETS} & set(environment))

"""The sandbox layer: faults through ``gbls check`` and the server, and one through the warm worker."""

from __future__ import annotations

from ..support.worker import _record_fixtures, analyse_file, worker  # noqa: F401 (fixtures)

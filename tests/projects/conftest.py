"""The projects layer: real transformers and diffusers code, through one warm worker."""

from __future__ import annotations

from ..support.worker import _record_fixtures, analyse_file, worker  # noqa: F401 (fixtures)

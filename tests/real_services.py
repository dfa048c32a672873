"""Opt-in tests against real cloud services: collected everywhere, skipped unless the
variables that point them at a service are set, so ``pytest -rs`` says how to run them."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pytest


def needs_environment(
    service: str, variables: Sequence[str], also: str = ""
) -> pytest.MarkDecorator:
    """Skip unless every one of ``variables`` is set; the reason names them all (and
    ``also``, what else the service needs) and the ones unset."""
    unset = [name for name in variables if not os.environ.get(name)]
    needs = f"{', '.join(variables)}{f' {also}' if also else ''}"
    return pytest.mark.skipif(
        bool(unset), reason=f"{service}: set {needs} to run it (unset: {', '.join(unset)})"
    )

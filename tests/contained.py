"""A child Python run with an address-space limit and a timeout, for tests whose input
may crash, hang or exhaust the process that reads it (where a fix is missing, the test
fails instead of the test run). The limit is set by the child itself before it runs the
code (no ``preexec_fn``, which is unsafe in a parent with threads)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import hudi_sync

CODE_ROOT = Path(hudi_sync.__file__).resolve().parents[1]
REPO = Path(__file__).resolve().parents[1]
MEMORY_LIMIT = 2 * 1024**3  # bytes of address space a child may take

_LIMITED = (
    "import os, resource, sys\n"
    "limit = int(sys.argv[1])\n"
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n"
)


def run_limited(
    args: list[str], timeout: float, memory: int = MEMORY_LIMIT
) -> subprocess.CompletedProcess[str]:
    """``python <args>`` with the code under test first on its path, at most ``memory``
    bytes of address space and ``timeout`` seconds (``subprocess.TimeoutExpired``)."""
    return subprocess.run(
        [sys.executable, "-c", _LIMITED, str(memory), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(CODE_ROOT), str(REPO)])},
        cwd=REPO,
    )

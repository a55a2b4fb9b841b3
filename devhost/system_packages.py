"""Debian packages the local tools need (RabbitMQ, and Chromium for the browser tests),
installed with apt-get when missing, as root.

Test workers run at once and may each find a package missing: apt-get refuses to run while
another holds dpkg's lock (exit 100, which failed a fresh clone's `make test` when two
workers installed at once). So installs take a lock of ours first, look again once they have
it (another worker may have installed the package meanwhile), and ask apt-get to wait for
dpkg's lock held by anything else.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path
from typing import Callable

LOCK = Path("/tmp/taskq-apt.lock")
DPKG_WAIT = ["-o", "DPkg::Lock::Timeout=600"]


def install(packages: list[str], present: Callable[[], bool], why: str) -> None:
    """Install `packages` unless `present()` says they are there already (once per machine)."""
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if present():
            return
        print(f"==> installing {' and '.join(packages)} from the system's packages (apt-get, {why})", flush=True)
        quiet = {"stdout": subprocess.DEVNULL, "env": {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}}
        subprocess.run(["apt-get", *DPKG_WAIT, "update", "-qq"], check=True, **quiet)
        subprocess.run(["apt-get", *DPKG_WAIT, "install", "-y", "-qq", *packages], check=True, **quiet)

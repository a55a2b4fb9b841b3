"""Concurrent installs of a missing package run apt-get once, waiting for dpkg's lock."""

import os
import stat
import threading

from devhost import system_packages


def test_two_workers_finding_a_package_missing_install_it_once(tmp_path, monkeypatch):
    calls, marker = tmp_path / "calls", tmp_path / "installed"
    fake = tmp_path / "bin" / "apt-get"   # a stand-in for apt-get that records how it was run
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nsleep 0.3\n'
                    f'case "$*" in *install*) touch {marker};; esac\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(system_packages, "LOCK", tmp_path / "apt.lock")

    workers = [threading.Thread(target=system_packages.install, args=(["pkg"], marker.exists, "test"))
               for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    runs = calls.read_text().splitlines()
    assert len(runs) == 2 and runs[1].endswith("install -y -qq pkg")   # one update, one install
    assert all("DPkg::Lock::Timeout=" in run for run in runs)

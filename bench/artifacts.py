"""A large artifact (1 GiB by default) up and down through the official helpers, beside a
raw Blob Storage PUT and GET of the same file in the same run, with the peak memory of
every process involved.

    python -m bench.artifacts [--size-mib 1024] [--rounds 1]

In one Azurite that keeps blobs on disk (as Azure does; in memory it would hold the file
itself) and the real local host (`python -m devhost`):
1. raw: a process PUTs the file to a signed Put Blob URL with `requests` (streamed from
   the file), then GETs it back to another file: the yardstick;
2. helpers: a process does what a worker and a consumer do with the official client:
   createTask, claimWork, createArtifact (object), `taskcluster.upload.uploadFromFile`
   (which hashes as it reads: SHA-256 and SHA-512), finishArtifact, then
   `taskcluster.download.downloadArtifactToFile` (which verifies both hashes);
3. raw again, as a drift check.
Each transfer runs in a process of its own, whose peak resident memory (VmHWM) it reports;
the host's and Azurite's are read from /proc before and after. Bounded memory means no
process's peak grows with the file: none holds it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from devhost.azurite import Azurite
from shared.domain.timestamps import utcnow, timedelta
from shared.storage.client.account import StorageAccount

from bench.memory import group_pids, own_peak, peaks
from bench.report import command_line, header, machine, progress, table, write_json

MIB = 1024 * 1024
CONTAINER = "bench-raw"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.artifacts", description=__doc__.split("\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="size of the artifact in MiB (default 1024)")
    parser.add_argument("--rounds", type=int, default=1, help="helper transfers, each between raw ones (default 1)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    info = machine()
    print(header(info), flush=True)
    results: dict = {"command": command_line("bench.artifacts"), "machine": info, "size_mib": args.size_mib}
    with tempfile.TemporaryDirectory(prefix="bench-artifacts-", dir=os.environ.get("BENCH_SCRATCH")) as scratch:
        scratch = Path(scratch)
        source = scratch / "artifact.bin"
        progress(f"writing a {args.size_mib} MiB file in {scratch}")
        results["sha256"] = make_file(source, args.size_mib)
        results["hashing_mib_per_s"] = hashing_rate(source)
        progress(f"SHA-256 and SHA-512 of the file in this Python: {results['hashing_mib_per_s']} MiB/s")
        with Azurite(scratch / "azurite") as azurite:
            progress(f"Azurite up (blobs on disk), blob port {azurite.ports['blob']}")
            from tests.conftest import start_server   # the tests' way of starting the real host
            server = start_server(azurite, scratch)
            try:
                progress(f"host up at {server.root_url}")
                watched = {"host": [server.process.pid], "azurite": group_pids(azurite.process.pid)}
                results["peaks_before_mib"] = peaks(watched)
                results["raw"] = [raw_round(azurite, source, scratch, "raw")]
                results["helpers"] = []
                for round_ in range(args.rounds):
                    results["helpers"].append(child(["helpers", server.root_url, str(source), str(scratch)]))
                    progress(f"  helpers: {describe(results['helpers'][-1], args.size_mib)}")
                    results["raw"].append(raw_round(azurite, source, scratch, f"raw{round_ + 2}"))
                results["peaks_after_mib"] = peaks(watched)
            finally:
                server.stop()
    results["headline"] = headline(results)
    print(table(rows(results)), flush=True)
    print(f"\n{results['headline']}")
    print(f"\nresults: {write_json('artifacts', results)}")
    return 0


def make_file(path: Path, size_mib: int) -> str:
    """A file of `size_mib` MiB of pseudo-random bytes (each MiB different); its SHA-256."""
    digest = hashlib.sha256()
    seed = os.urandom(MIB)
    with path.open("wb") as file:
        for index in range(size_mib):
            block = hashlib.sha256(index.to_bytes(8, "big")).digest() * 8 + seed[256:]
            digest.update(block)
            file.write(block)
    return digest.hexdigest()


def hashing_rate(path: Path, limit_mib: int = 256) -> float:
    """How fast this Python computes the two hashes the helpers compute as they stream:
    the ceiling of a helper transfer on this machine, whatever the storage."""
    sha256, sha512, done = hashlib.sha256(), hashlib.sha512(), 0
    started = time.perf_counter()
    with path.open("rb") as file:
        while done < limit_mib and (block := file.read(MIB)):
            sha256.update(block)
            sha512.update(block)
            done += 1
    return round(done / (time.perf_counter() - started), 1)


def raw_round(azurite: Azurite, source: Path, scratch: Path, name: str) -> dict:
    """The yardstick: the same bytes by one signed PUT and one GET, no helper."""
    blobs = StorageAccount(azurite.connection_string).blobs(CONTAINER)
    size = source.stat().st_size
    soon = utcnow() + timedelta(hours=1)
    url, headers = blobs.upload_url(name, "application/octet-stream", size, soon)
    figures = child(["raw", url, json.dumps(headers), blobs.download_url(name, soon), str(source), str(scratch)])
    blobs.delete(name)
    progress(f"  {name}: {describe(figures, size // MIB)}")
    return figures


def child(arguments: list[str]) -> dict:
    """Run one transfer in a process of its own; its figures (with its peak memory)."""
    done = subprocess.run([sys.executable, "-m", "bench.artifacts", "--child", *arguments], check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def describe(figures: dict, size_mib: int) -> str:
    return (f"up {size_mib / figures['upload_s']:.1f} MiB/s, down {size_mib / figures['download_s']:.1f} MiB/s, "
            f"peak {figures['peak_rss_mib']} MiB")


# -- the transfers, each in its own process ------------------------------------------------------
def run_child(kind: str, arguments: list[str]) -> dict:
    if kind == "raw":
        return raw_transfer(*arguments)
    return helper_transfer(*arguments)


def raw_transfer(put_url: str, headers: str, get_url: str, source: str, scratch: str) -> dict:
    import requests

    started = time.perf_counter()
    with open(source, "rb") as file:
        response = requests.put(put_url, data=file, headers=json.loads(headers), timeout=3600)
    response.raise_for_status()
    uploaded = time.perf_counter()
    target = Path(scratch) / "raw-download.bin"
    with requests.get(get_url, stream=True, timeout=3600) as response, target.open("wb") as file:
        response.raise_for_status()
        for chunk in response.iter_content(MIB):
            file.write(chunk)
    downloaded = time.perf_counter()
    same = target.stat().st_size == os.path.getsize(source)
    target.unlink()
    return {"upload_s": round(uploaded - started, 2), "download_s": round(downloaded - uploaded, 2),
            "complete": same, "peak_rss_mib": own_peak()}


def helper_transfer(root_url: str, source: str, scratch: str) -> dict:
    import taskcluster
    from taskcluster import download, upload

    from bench.tasks import task_definition

    queue = taskcluster.Queue({"rootUrl": root_url})
    definition = task_definition("bench-artifacts/worker", taskcluster.slugId())
    task_id = definition["taskGroupId"]
    queue.createTask(task_id, definition)
    queue.claimWork(definition["taskQueueId"], {"workerGroup": "bench", "workerId": "w1", "tasks": 1})
    size = os.path.getsize(source)
    started = time.perf_counter()
    answer = queue.createArtifact(task_id, "0", "public/big.bin", {
        "storageType": "object", "contentType": "application/octet-stream", "contentLength": size,
        "expires": taskcluster.fromNowJSON("1 hour")})
    objects = taskcluster.Object({"rootUrl": root_url, "credentials": answer["credentials"]})
    with open(source, "rb") as file:
        upload.uploadFromFile(projectId=answer["projectId"], name=answer["name"],
                              contentType="application/octet-stream", contentLength=size,
                              expires=answer["expires"], uploadId=answer["uploadId"], objectService=objects,
                              file=file)
    queue.finishArtifact(task_id, "0", "public/big.bin", {"uploadId": answer["uploadId"]})
    uploaded = time.perf_counter()
    target = Path(scratch) / "helper-download.bin"
    with target.open("wb") as file:
        download.downloadArtifactToFile(file=file, taskId=task_id, runId=0, name="public/big.bin",
                                        queueService=queue)
    downloaded = time.perf_counter()
    same = target.stat().st_size == size   # the helper verified both hashes
    target.unlink()
    queue.reportCompleted(task_id, "0")
    return {"upload_s": round(uploaded - started, 2), "download_s": round(downloaded - uploaded, 2),
            "complete": same, "peak_rss_mib": own_peak()}


# -- output ------------------------------------------------------------------------------------
def rows(results: dict) -> list[tuple[str, str]]:
    size = results["size_mib"]
    out = [(f"{size} MiB artifact: throughput (MiB/s) and peak resident memory of the process", "")]
    for label, figures in [*((f"raw PUT/GET #{i + 1}", f) for i, f in enumerate(results["raw"])),
                           *((f"official helpers #{i + 1}", f) for i, f in enumerate(results["helpers"]))]:
        out.append((label, f"up {size / figures['upload_s']:7.1f}   down {size / figures['download_s']:7.1f}   "
                           f"peak {figures['peak_rss_mib']:7.1f} MiB   complete {figures['complete']}"))
    out.append(("SHA-256 + SHA-512 in this Python (the helpers' ceiling)", f"{results['hashing_mib_per_s']:7.1f}"))
    before, after = results["peaks_before_mib"], results["peaks_after_mib"]
    out.append(("peak resident memory, before -> after the transfers", ""))
    for name in before:
        out.append((name, f"{before[name]:7.1f} -> {after[name]:7.1f} MiB"))
    return out


def headline(results: dict) -> str:
    size, raw, helpers = results["size_mib"], results["raw"], results["helpers"]
    raw_up = size / (sum(f["upload_s"] for f in raw) / len(raw))
    raw_down = size / (sum(f["download_s"] for f in raw) / len(raw))
    up = size / (sum(f["upload_s"] for f in helpers) / len(helpers))
    down = size / (sum(f["download_s"] for f in helpers) / len(helpers))
    peak = max([f["peak_rss_mib"] for f in helpers] + list(results["peaks_after_mib"].values()))
    return (f"headline: {size} MiB through the official helpers up {up:.1f} MiB/s ({up / raw_up:.0%} of a raw PUT, "
            f"{raw_up:.1f}), down {down:.1f} MiB/s ({down / raw_down:.0%} of a raw GET, {raw_down:.1f}; hashing alone "
            f"{results['hashing_mib_per_s']:.1f}); largest peak memory of any process {peak:.0f} MiB")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(run_child(sys.argv[2], sys.argv[3:])))
        sys.exit(0)
    sys.exit(main())

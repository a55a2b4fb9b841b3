"""The parts of host.json the local host honours, and Azure's defaults when they are absent."""

import json
from pathlib import Path

from devhost.host_config import HostConfig

ROOT = Path(__file__).resolve().parents[2]


def write_host_json(app_dir, extensions: dict | None) -> None:
    document = {"version": "2.0"}
    if extensions is not None:
        document["extensions"] = extensions
    (app_dir / "host.json").write_text(json.dumps(document))


def test_values_from_host_json(tmp_path):
    write_host_json(tmp_path, {
        "http": {"routePrefix": "/custom/"},
        "queues": {"batchSize": 4, "maxDequeueCount": 2, "visibilityTimeout": "00:00:03",
                   "maxPollingInterval": "00:01:30", "messageEncoding": "none", "newBatchThreshold": 1}})
    config = HostConfig.read(tmp_path)
    assert config == HostConfig(route_prefix="custom", batch_size=4, max_dequeue_count=2,
                                visibility_timeout=3.0, max_polling_interval=90.0, base64_messages=False,
                                new_batch_threshold=1)
    assert config.fetch_below == 1


def test_empty_route_prefix_is_kept_empty(tmp_path):
    write_host_json(tmp_path, {"http": {"routePrefix": ""}})
    assert HostConfig.read(tmp_path).route_prefix == ""


def test_defaults_without_extensions_or_without_host_json(tmp_path):
    expected = HostConfig(route_prefix="api", batch_size=16, max_dequeue_count=5, visibility_timeout=0.0,
                          max_polling_interval=60.0, base64_messages=True)
    assert HostConfig.read(tmp_path) == expected  # no host.json at all
    write_host_json(tmp_path, None)
    assert HostConfig.read(tmp_path) == expected
    write_host_json(tmp_path, {"queues": {"batchSize": 8}})  # one value set, the others default
    assert HostConfig.read(tmp_path) == HostConfig(batch_size=8)
    assert HostConfig.read(tmp_path).fetch_below == 4        # newBatchThreshold: half of batchSize


def test_the_projects_own_host_json():
    # Taskcluster clients call <rootUrl>/api/queue/v1/..., so the prefix must stay "api".
    assert HostConfig.read(ROOT).route_prefix == "api"

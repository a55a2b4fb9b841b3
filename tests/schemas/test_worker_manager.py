"""The worker-manager schemas (schemas/v1/worker-manager): what they accept, what they refuse
with a message naming the field, and that what we send is what Taskcluster's clients expect."""

import pytest

from shared.domain.errors import InvalidInput
from shared.validation import validate, violations
from tests.reference import schema_errors

WM = "worker-manager-schemas-json"
SECRET = "a" * 22 + "B" * 22
NOW = "2026-11-28T10:00:00.000Z"
POOL = {"providerId": "local", "description": "builds", "owner": "me@example.com", "emailOnError": False,
        "config": {"maxCapacity": 3}}
COUNTS = {f"{state}{kind}": 0 for state in ("requested", "running", "stopping", "stopped")
          for kind in ("Count", "Capacity")}
POOL_FULL = {**POOL, "workerPoolId": "proj/linux", "created": NOW, "lastModified": NOW, "currentCapacity": 0, **COUNTS}
WORKER = {"workerPoolId": "proj/linux", "workerGroup": "local", "workerId": "local-1f2e", "providerId": "local",
          "created": NOW, "expires": NOW, "state": "running", "capacity": 1, "lastChecked": NOW, "lastModified": NOW}
REGISTER = {"workerPoolId": "proj/linux", "providerId": "local", "workerGroup": "local", "workerId": "local-1f2e",
            "workerIdentityProof": {"token": SECRET}}
CREDENTIALS = {"clientId": "worker/proj/linux/local/local-1f2e", "accessToken": "x", "certificate": "{}"}

VALID = [
    ("create-worker-pool-request", POOL),
    ("update-worker-pool-request", {**POOL, "workerPoolId": "proj/linux", "created": NOW, "lastModified": NOW}),
    ("config-local", {"minCapacity": 0, "maxCapacity": 8, "scalingRatio": 0.5, "capacityPerInstance": 2,
                      "lifecycle": {"registrationTimeout": 60, "reregistrationTimeout": 3600},
                      "workerConfig": {"idleTimeoutSecs": 0, "anything": ["goes"]}}),
    ("config-azure-container-apps", {"maxCapacity": 100, "container": {"image": "r.io/w:1", "cpu": 0.5, "memory": "1Gi"}}),
    ("config-static", {"lifecycle": {"reregistrationTimeout": 3600}, "workerConfig": {"x": 1}}),
    ("config-static", {}),
    ("create-worker-request", {"expires": NOW, "capacity": 2, "providerInfo": {"staticSecret": SECRET}}),
    ("create-worker-request", {"expires": NOW}),   # providerInfo is the provider's to require, as Taskcluster's
    ("register-worker-request", REGISTER),
    ("register-worker-request", {**REGISTER, "workerIdentityProof": {"staticSecret": SECRET}, "systemBootTime": NOW}),
    ("reregister-worker-request", {"workerPoolId": "proj/linux", "workerGroup": "local", "workerId": "w", "secret": SECRET}),
    ("report-worker-error-request", {"workerGroup": "local", "workerId": "w", "kind": "disk-full", "title": "Disk full",
                                     "description": "no space left", "extra": {"free": 0}}),
]

INVALID = [
    ("create-worker-pool-request", {**POOL, "providerId": "no spaces"}, "providerId: "),
    ("create-worker-pool-request", {k: v for k, v in POOL.items() if k != "owner"}, "'owner' is a required property"),
    ("create-worker-pool-request", {**POOL, "config": []}, "config: [] is not of type 'object'"),
    ("update-worker-pool-request", {**POOL, "workerPoolId": "Proj/Linux"}, "workerPoolId: "),
    ("config-local", {}, "'maxCapacity' is a required property"),
    ("config-local", {"maxCapacity": 65}, "maxCapacity: 65 is greater than the maximum of 64"),
    ("config-local", {"maxCapacity": 2, "scalingRatio": 1.5}, "scalingRatio: 1.5 is greater than the maximum of 1"),
    ("config-local", {"maxCapacity": 2, "workerConfig": {"idleTimeoutSecs": "60"}}, "workerConfig.idleTimeoutSecs: "),
    ("config-local", {"maxCapacity": 2, "lifecycle": {"queueInactivityTimeout": 60}},
     "lifecycle.queueInactivityTimeout: 60 is less than the minimum of 1200"),
    ("config-local", {"maxCapacity": 2, "lifecycle": {"registrationTimout": 60}}, "lifecycle: Additional properties"),
    ("config-local", {"maxCapacity": 2, "launchConfigs": []}, "(root): Additional properties"),
    ("config-azure-container-apps", {"maxCapacity": 2, "container": {"memory": "1GB"}}, "container.memory: "),
    ("config-static", {"lifecycle": {"registrationTimeout": 60}}, "lifecycle: Additional properties"),
    ("create-worker-request", {"expires": NOW, "providerInfo": {"staticSecret": "short"}}, "providerInfo.staticSecret: "),
    ("create-worker-request", {"expires": "tomorrow", "providerInfo": {"staticSecret": SECRET}}, "expires: "),
    ("register-worker-request", {**REGISTER, "workerId": "x" * 39}, "workerId: "),
    ("register-worker-request", {**REGISTER, "workerIdentityProof": {"token": "short"}}, "workerIdentityProof: "),
    ("register-worker-request", {**REGISTER, "workerIdentityProof": {"document": "aws"}}, "workerIdentityProof: "),
    ("reregister-worker-request", {"workerPoolId": "proj/linux", "workerGroup": "g", "workerId": "w"},
     "'secret' is a required property"),
    ("report-worker-error-request", {"workerGroup": "g", "workerId": "w", "kind": "Disk Full", "title": "t",
                                     "description": "d", "extra": {}}, "kind: "),
]


@pytest.mark.parametrize("schema, body", VALID, ids=[f"{s}-{i}" for i, (s, _) in enumerate(VALID)])
def test_valid_bodies_are_accepted(schema, body):
    assert violations(f"worker-manager/{schema}", body) == []


@pytest.mark.parametrize("schema, body, message", INVALID, ids=[f"{s}-{i}" for i, (s, _, _) in enumerate(INVALID)])
def test_invalid_bodies_are_refused_naming_the_field(schema, body, message):
    with pytest.raises(InvalidInput) as refused:
        validate(f"worker-manager/{schema}", body)
    assert message in refused.value.message


def test_a_pools_config_is_named_as_part_of_the_request():
    with pytest.raises(InvalidInput, match=r"^config.maxCapacity: -1 is less than the minimum of 0$"):
        validate("worker-manager/config-local", {"maxCapacity": -1}, where="config")


@pytest.mark.parametrize("schema, body", [(s, b) for s, b in VALID if not s.startswith("config-")])
def test_requests_we_accept_taskcluster_accepts_too(schema, body):
    """Clients written for Taskcluster send bodies its schemas accept; ours accept a subset
    (the identity proofs our providers use)."""
    assert schema_errors(schema, body, WM) == []


RESPONSES = [
    ("worker-pool-full", POOL_FULL),
    ("worker-pool-list", {"workerPools": [POOL_FULL], "continuationToken": "next"}),
    ("worker-pool-stats", {"launchConfigStats": [{"workerPoolId": "proj/linux", "launchConfigId": "default",
                                                  "currentCapacity": 0, **COUNTS}]}),
    ("worker-full", WORKER),
    ("worker-list", {"workers": [WORKER, {**WORKER, "workerId": "w2", "state": "requested", "launchConfigId": "default"}]}),
    ("register-worker-response", {"expires": NOW, "credentials": CREDENTIALS, "workerConfig": {"idleTimeoutSecs": 60},
                                  "secret": SECRET}),
    ("reregister-worker-response", {"expires": NOW, "credentials": CREDENTIALS, "secret": SECRET}),
    ("should-worker-terminate-response", {"terminate": True, "reason": "worker pool is idle"}),
    ("worker-pool-error", {"workerPoolId": "proj/linux", "errorId": "fN1SbArXTPSVFNUvaOlinQ", "reported": NOW,
                           "kind": "quota-exceeded", "title": "Quota exceeded", "description": "d", "extra": {}}),
    ("worker-pool-error-list", {"workerPoolErrors": []}),
    ("provider-list", {"providers": [{"providerId": "local", "providerType": "local"}]}),
    ("worker-pool-list-stats", {"workerPoolsStats": [{"workerPoolId": "proj/linux", "currentCapacity": 0, **COUNTS}],
                                "continuationToken": "next"}),
    ("worker-pool-launch-config-list", {"workerPoolLaunchConfigs": [
        {"launchConfigId": "default", "workerPoolId": "proj/linux", "isArchived": False,
         "configuration": {"maxCapacity": 3}, "created": NOW, "lastModified": NOW}]}),
    ("worker-pool-error-stats", {"workerPoolId": "", "totals": {
        "total": 1, "daily": {NOW: 1}, "hourly": {NOW: 1}, "title": {"Disk full": 1}, "code": {"other": 1},
        "launchConfig": {"default": 1}, "workerPool": {"proj/linux": 1}}}),
    ("list-workers-response", {"workers": [
        {"workerGroup": "g", "workerId": "w", "firstClaim": NOW, "lastDateActive": NOW, "workerPoolId": "proj/linux",
         "state": "standalone", "capacity": 0, "providerId": "none",
         "latestTask": {"taskId": "fN1SbArXTPSVFNUvaOlinQ", "runId": 0}}]}),
    ("worker-response", {"provisionerId": "proj", "workerType": "linux", "workerPoolId": "proj/linux",
                         "workerGroup": "g", "workerId": "w", "recentTasks": [], "expires": NOW, "firstClaim": NOW,
                         "lastDateActive": NOW, "quarantineDetails": [], "state": "running", "capacity": 2,
                         "providerId": "static"}),
]


@pytest.mark.parametrize("schema, body", RESPONSES, ids=[s for s, _ in RESPONSES])
def test_responses_we_would_send_conform_to_ours_and_to_taskclusters(schema, body):
    assert violations(f"worker-manager/{schema}", body) == []
    assert schema_errors(schema, body, WM) == []


def test_a_response_missing_a_count_is_refused_naming_it():
    body = {key: value for key, value in POOL_FULL.items() if key != "stoppingCapacity"}
    assert violations("worker-manager/worker-pool-full", body) == ["(root): 'stoppingCapacity' is a required property"]

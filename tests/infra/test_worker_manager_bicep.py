"""infra/worker-manager.bicep: a manual-trigger job whose executions are workers, and a role
that lets the app's identity do exactly what the Container Apps provider does to them."""

import inspect
import re
from pathlib import Path

from shared.providers import azure_container_apps
from shared.providers.azure_container_apps import ContainerAppsProvider
from tests.infra.test_main_bicep import deployed_settings, resource as bicep_resource

BICEP = (Path(__file__).parents[2] / "infra" / "worker-manager.bicep").read_text()


def resource(symbol: str) -> str:
    return bicep_resource(symbol, BICEP)


def test_the_job_is_started_by_hand_one_worker_per_execution_never_restarted():
    job = resource("job")
    assert "'Microsoft.App/jobs@" in job and "environmentId: environment.id" in job
    assert "triggerType: 'Manual'" in job and "parallelism: 1, replicaCompletionCount: 1" in job
    assert "replicaRetryLimit: 0" in job and "image: workerImage" in job
    # The provider overrides the container it names: the job's container has that name.
    default = inspect.signature(ContainerAppsProvider.__init__).parameters["container_name"].default
    assert f"name: '{default}'" in job


def test_the_role_grants_exactly_the_operations_the_provider_calls():
    actions = re.findall(r"'(Microsoft\.App/[^']+)'", re.search(r"var executionActions = \[(.*?)\]", BICEP, re.S).group(1))
    assert actions == ["Microsoft.App/jobs/start/action", "Microsoft.App/jobs/executions/read",
                       "Microsoft.App/jobs/stop/execution/action"]
    source = inspect.getsource(azure_container_apps)
    calls = set(re.findall(r"client\.(jobs(?:_executions)?\.\w+)\(", source))
    assert calls == {"jobs.begin_start", "jobs_executions.list", "jobs.begin_stop_execution"}
    role = resource("executionsRole")
    assert "type: 'CustomRole'" in role and "actions: executionActions" in role and "*" not in role


def test_the_role_is_the_apps_on_this_job_alone():
    assignment = resource("appStartsWorkers")
    assert "scope: job\n" in assignment and "principalId: appPrincipalId" in assignment
    assert "roleDefinitionId: executionsRole.id" in assignment and "principalType: 'ServicePrincipal'" in assignment


def test_the_settings_the_provider_reads_are_deployed_with_the_module():
    named = set(re.findall(r"WORKER_MANAGER_ACA_[A-Z_]+", inspect.getsource(ContainerAppsProvider.from_settings)))
    deployed = {name for name in deployed_settings() if name.startswith("WORKER_MANAGER_ACA_")}
    assert named == deployed and len(named) == 5
    # main.bicep names the job as the module does (it cannot read the module's outputs).
    assert "var jobName = take(toLower('${replace(appName, '_', '-')}-workers'), 32)" in BICEP
    assert {"jobName", "location", "image"} <= set(re.findall(r"^output (\w+) ", BICEP, re.M))



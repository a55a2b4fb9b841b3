"""infra/main.bicep sets every app setting the app needs, or a deployed host would not start."""

import json
import re
from pathlib import Path

from shared.domain.task_events import EXCHANGES
from shared.events.service_bus import ServiceBusBus, topic_name
from tests.functions.test_function_app import functions_by_name

ROOT = Path(__file__).parents[2]
BICEP = (ROOT / "infra" / "main.bicep").read_text()


def deployed_settings() -> dict[str, str]:
    """The app settings of main.bicep, name -> value expression."""
    return dict(re.findall(r"\{ name: '([A-Za-z0-9_]+)', value: (.+?) \}", BICEP))


# Settings of a local host that Azure's Flex Consumption plan takes another way: the
# storage connection as an identity-based one (its section's account name), the worker
# runtime from the app's functionAppConfig (the plan refuses the setting).
DEPLOYED_AS = {"AzureWebJobsStorage": "AzureWebJobsStorage__accountName"}
GIVEN_OTHERWISE = {"FUNCTIONS_WORKER_RUNTIME": "runtime: { name: 'python', version: '3.11' }"}


def deployed(name: str) -> bool:
    if name in GIVEN_OTHERWISE:
        return GIVEN_OTHERWISE[name] in resource("app")
    return DEPLOYED_AS.get(name, name) in deployed_settings()


def test_every_setting_a_trigger_names_is_deployed():
    named = set()
    for function in functions_by_name().values():
        trigger = function.get_trigger()
        for attribute in ("schedule", "queue_name", "connection"):
            named.update(re.findall(r"%([A-Za-z0-9_]+)%", str(getattr(trigger, attribute, "") or "")))
            if attribute == "connection" and getattr(trigger, attribute, None):
                named.add(trigger.connection)
    assert named, "the app's triggers name no settings: the test would prove nothing"
    assert [name for name in named if not deployed(name)] == []


def test_every_local_setting_is_deployed_too():
    local = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    assert [name for name in local if not deployed(name)] == []


def test_storage_takes_no_key_and_the_app_signs_in_with_its_identity():
    account = resource("storage")
    assert "allowSharedKeyAccess: false" in account and "listKeys" not in BICEP
    settings = deployed_settings()
    assert settings["AzureWebJobsStorage__accountName"] == "storage.name" and "AzureWebJobsStorage" not in settings
    assert settings["AzureWebJobsStorage__credential"] == "'managedidentity'"
    # The app reads the same settings as the Functions host (shared/storage/client/identity.py).
    from shared.storage.client.identity import IdentityConnection
    assert IdentityConnection.from_settings({"accountName": "store"}).urls["table"] == "https://store.table.core.windows.net"


def test_the_app_has_exactly_the_data_roles_it_needs_on_its_storage():
    roles = dict(re.findall(r"^  (\w+): '([0-9a-f-]{36})'", re.search(r"var storageRoles = \{(.*?)\n\}", BICEP, re.S).group(0),
                            re.M))
    assert roles == {"tableDataContributor": "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3",    # Azure's ids of the roles
                     "queueDataContributor": "974c5e8b-45b9-4653-ba55-5f855dd0fb88",
                     "blobDataOwner": "b7e6dc6d-f1e8-4753-8033-0f276bb0955b"}
    assigned = resource("appUsesStorage")
    assert "[for role in items(storageRoles):" in assigned and "scope: storage\n" in assigned
    assert "principalId: app.identity.principalId" in assigned and "roleDefinitions', role.value)" in assigned


def test_the_app_runs_on_flex_consumption_from_a_package_reached_with_its_identity():
    assert "sku: { name: 'FC1', tier: 'FlexConsumption' }" in resource("plan")
    app = resource("app")
    assert "type: 'blobContainer'" in app and "authentication: { type: 'SystemAssignedIdentity' }" in app
    assert "value: '${storage.properties.primaryEndpoints.blob}${deploymentContainerName}'" in app
    assert "name: deploymentContainerName" in resource("deploymentContainer")
    assert "linuxFxVersion:" not in app and "FUNCTIONS_WORKER_RUNTIME'" not in app and "FUNCTIONS_EXTENSION_VERSION" not in app


def test_schedules_are_six_field_ncrontab_and_secrets_are_parameters():
    settings = deployed_settings()
    schedules = {name: value.strip("'") for name, value in settings.items() if name.endswith("_SCHEDULE")}
    sample = json.loads((Path(__file__).parents[2] / "local.settings.sample.json").read_text())["Values"]
    assert set(schedules) == {name for name in sample if name.endswith("_SCHEDULE")}   # every timer's
    assert all(len(value.split()) == 6 for value in schedules.values())
    assert settings["QUEUE_CREDENTIALS_ACCESS_TOKEN"] == "credentialsAccessToken"
    assert "@secure()\n@description('Access token" in BICEP
    assert settings["STATIC_CLIENTS"] == "staticClients"
    assert "@secure()\n@description('STATIC_CLIENTS" in BICEP


def resource(symbol: str, bicep: str = BICEP) -> str:
    """The text of the resource declared as `resource <symbol> '...' = ...` in `bicep` (by
    default main.bicep), braces balanced."""
    start = bicep.index(f"resource {symbol} '")
    depth, position = 0, bicep.index("{", start)
    for position in range(position, len(bicep)):
        depth += {"{": 1, "}": -1}.get(bicep[position], 0)
        if depth == 0:
            return bicep[start:position + 1]
    raise AssertionError(f"resource {symbol} is not closed")


def test_events_have_a_standard_namespace_with_a_topic_per_exchange_and_duplicate_detection():
    namespace = resource("serviceBus")
    assert "'Microsoft.ServiceBus/namespaces@" in namespace and "sku: { name: 'Standard'" in namespace
    declared = re.search(r"var eventExchanges = \[(.*?)\]", BICEP, re.S).group(1)
    assert re.findall(r"'([a-z-]+)'", declared) == [topic_name(exchange) for exchange in EXCHANGES]
    topics = resource("eventTopics")
    assert "[for exchange in eventExchanges:" in topics and "name: exchange" in topics
    assert "requiresDuplicateDetection: true" in topics and "parent: serviceBus" in topics


def test_the_app_sends_events_with_its_managed_identity():
    assert deployed_settings()["EVENTS_SERVICE_BUS_NAMESPACE"] == "serviceBusHost"
    assert "var serviceBusHost = split(split(serviceBus.properties.serviceBusEndpoint, '//')[1], ':')[0]" in BICEP
    assert "identity: { type: 'SystemAssigned' }" in resource("app")
    sender = resource("appSendsEvents")
    assert "scope: serviceBus\n" in sender and "principalId: app.identity.principalId" in sender
    assert "var serviceBusDataSender = '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39'" in BICEP   # Azure's id of the role
    assert "roleDefinitions', serviceBusDataSender)" in sender
    # The adapter reads exactly these settings (the lead's wiring passes them to from_settings).
    assert {"EVENTS_SERVICE_BUS_CONNECTION", "EVENTS_SERVICE_BUS_NAMESPACE"} <= set(
        re.findall(r"EVENTS_SERVICE_BUS_[A-Z]+", ServiceBusBus.from_settings.__doc__))

def test_the_app_may_manage_the_browsers_feeds():
    owner = resource("appManagesFeeds")
    assert "scope: serviceBus\n" in owner and "principalId: app.identity.principalId" in owner
    assert "var serviceBusDataOwner = '090c5cfd-751d-490a-894a-3ce6f1109419'" in BICEP   # Azure's id of the role
    assert "roleDefinitions', serviceBusDataOwner)" in owner


def test_the_artifacts_container_is_private_and_named_by_its_setting():
    container = re.search(r"resource artifactsContainer '([^']+)' = \{(.*?)\n\}", BICEP, re.S)
    assert container and container.group(1).startswith("Microsoft.Storage/storageAccounts/blobServices/containers@")
    assert "publicAccess: 'None'" in container.group(2) and "name: artifactsContainerName" in container.group(2)
    assert deployed_settings()["QUEUE_ARTIFACTS_CONTAINER"] == "artifactsContainer.name"
    assert "allowBlobPublicAccess: false" in BICEP
    assert "QUEUE_PUBLIC_URL" in deployed_settings()


def test_the_worker_managers_container_apps_job_is_deployed_with_a_worker_image():
    module = re.search(r"module workerManager 'worker-manager.bicep' = if \(!empty\(workerImage\)\) \{.*?\n\}",
                       BICEP, re.S)
    assert module and "appPrincipalId: app.identity.principalId" in module.group(0)
    settings = deployed_settings()
    assert settings["WORKER_MANAGER_ACA_JOB_NAME"] == "empty(workerImage) ? '' : workerJobName"
    assert settings["WORKER_MANAGER_LOCAL_PROVIDER"] == "'false'"
    # The app names the job as the module does (the app cannot wait for the module's outputs).
    module_bicep = (ROOT / "infra" / "worker-manager.bicep").read_text()
    assert "take(toLower('${replace(appName, '_', '-')}-workers'), 32)" in module_bicep
    assert "var workerJobName = take(toLower('${replace(appName, '_', '-')}-workers'), 32)" in BICEP


def test_people_who_listen_to_the_events_may_make_their_feeds():
    assert "param eventListenerPrincipalIds array = []" in BICEP
    listeners = resource("listenersReadEvents")
    assert "[for principal in eventListenerPrincipalIds:" in listeners and "scope: serviceBus\n" in listeners
    assert "principalId: principal" in listeners and "roleDefinitions', serviceBusDataOwner)" in listeners
    assert "name: guid(serviceBus.id, principal, serviceBusDataOwner)" in listeners   # one per person, stable


def test_the_secrets_keys_come_from_key_vault_readable_by_the_app_alone():
    """SECRETS_ENCRYPTION_KEYS is a Key Vault reference to a secret made from a secure parameter,
    and the app's identity may read that secret (Key Vault Secrets User on it), nothing more."""
    assert deployed_settings()["SECRETS_ENCRYPTION_KEYS"] == \
        "'@Microsoft.KeyVault(SecretUri=${secretsKeys.properties.secretUri})'"
    assert "@secure()\n@description('SECRETS_ENCRYPTION_KEYS" in BICEP
    vault = resource("secretsVault")
    assert "'Microsoft.KeyVault/vaults@" in vault and "enableRbacAuthorization: true" in vault
    assert "enablePurgeProtection: true" in vault and "tenantId: subscription().tenantId" in vault
    secret = resource("secretsKeys")
    assert "parent: secretsVault" in secret and "value: secretsEncryptionKeys" in secret
    reader = resource("appReadsSecretsKeys")
    assert "scope: secretsKeys" in reader and "principalId: app.identity.principalId" in reader
    assert "var keyVaultSecretsUser = '4633458b-17de-408a-b874-0445c86b69e6'" in BICEP   # Azure's id of the role
    assert "roleDefinitions', keyVaultSecretsUser)" in reader
    assert "identity: { type: 'SystemAssigned' }" in resource("app")

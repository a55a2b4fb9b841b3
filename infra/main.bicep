// The Queue's Azure resources: one storage account (tables, queues, blobs) with shared key
// access off, a Flex Consumption plan running the Python Function App, which reaches the
// account with its managed identity only, and Application Insights for its logs.
// Every app setting the app reads is set here; tests/infra checks that none is missing,
// because the Functions host refuses to start a trigger whose %SETTING% is unset.
//
// The whole path, from an empty subscription to a first task (every command, setting and
// permission): docs/deploy.md, whose commands tests/infra checks against this file.
//
// Events (seed 004) go to a Service Bus namespace: one topic per exchange, published to by the
// app's managed identity (see shared/events/service_bus.py).

@description('Name of the Function App; also the prefix of the other resources.')
@minLength(3)
@maxLength(40)
param appName string

param location string = resourceGroup().location

@description('Seconds a claim lasts before the worker must reclaim (Taskcluster: 1200).')
param claimTimeoutSeconds int = 1200

@description('Client id that issues the temporary credentials handed out with each claim.')
param credentialsClientId string = 'queue'

@secure()
@description('Access token of that client (signs the temporary credentials); trusted with scope * unless staticClients lists the client.')
param credentialsAccessToken string

@description('How long each topic remembers a message id to drop a republished event (ISO 8601, 20 s to 7 days).')
param eventsDuplicateWindow string = 'PT1H'

@description('Blob container holding the artifacts\' bytes (object service objects and s3 artifacts).')
param artifactsContainerName string = 'artifacts'

@description('Origins whose web pages may read artifacts straight from Blob Storage (the browser view).')
param artifactReadOrigins array = ['*']

@secure()
@description('STATIC_CLIENTS: the clients every request is checked against, JSON [{clientId, accessToken, scopes}] (Taskcluster\'s format).')
param staticClients string

@description('QUEUE_ROLES: JSON [{roleId, scopes}], expanded through assume:<roleId>.')
param roles string = '[]'

@description('QUEUE_ANONYMOUS_SCOPES: JSON [scope] of callers without credentials; empty: Taskcluster\'s public reading.')
param anonymousScopes string = ''

@description('Object ids of people (or service principals) who read the events with `taskq listen --service-bus`: each gets \'Azure Service Bus Data Owner\' on the namespace, which making a listener\'s feed takes. `az ad signed-in-user show --query id -o tsv` gives yours.')
param eventListenerPrincipalIds array = []

@description('QUEUE_PUBLIC_URL: the origin clients call (https://queue.example.com) when a front end or custom domain stands before the app; empty: the Host and X-Forwarded-* headers.')
param publicUrl string = ''

@description('Instances the Flex Consumption plan may scale the app out to (40 to 1000).')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 100
@description('The worker image (python -m taskq_worker) the worker manager runs as Azure Container Apps job executions, one per worker, for pools of provider azure-container-apps; empty: no such provider.')
param workerImage string = ''

var storageName = take('${toLower(replace(appName, '-', ''))}store', 24)
// As worker-manager.bicep names its job: the app's settings name it without reading the
// module's outputs (the module needs the app's identity, so the app cannot wait for it).
var workerJobName = take(toLower('${replace(appName, '_', '-')}-workers'), 32)

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: storageName
  location: location
  sku: { name: 'Standard_LRS' }
  kind: 'StorageV2'
  properties: {
    minimumTlsVersion: 'TLS1_2'
    allowBlobPublicAccess: false
    supportsHttpsTrafficOnly: true
    // No account key opens it: the app, the Functions host and the deployment all sign in
    // with the app's identity (see storageRoles), people with theirs.
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
  }
}

// Artifacts: one private container; clients reach single blobs only through short-lived
// signed URLs the app hands out (a PUT to upload, a GET to download), keyed
// `t/<taskId>/<runId>/<artifact name>` so a task's blobs are listed by prefix.
resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
  properties: {
    cors: {
      corsRules: [
        {
          allowedOrigins: artifactReadOrigins
          allowedMethods: ['GET', 'HEAD']
          allowedHeaders: ['*']
          exposedHeaders: ['Content-Length', 'Content-Type', 'ETag']
          maxAgeInSeconds: 3600
        }
      ]
    }
  }
}

resource artifactsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: artifactsContainerName
  properties: { publicAccess: 'None' }
}

// The Flex Consumption plan runs the package `func azure functionapp publish` uploads from
// this container, which the platform reaches with the app's identity.
var deploymentContainerName = 'app-package'

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: { publicAccess: 'None' }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: '${appName}-insights'
  location: location
  kind: 'web'
  properties: { Application_Type: 'web' }
}

// Flex Consumption: Linux, billed per execution like Y1, and (unlike Y1, whose content
// share needs the account key) able to run with shared key access off.
resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: '${appName}-plan'
  location: location
  sku: { name: 'FC1', tier: 'FlexConsumption' }
  kind: 'functionapp'
  properties: { reserved: true }   // Linux
}

// The exchanges of seed 004 (EXCHANGES in shared/domain/task_events.py), one topic each, named
// by the exchange's short name (shared/events/service_bus.py: topic_name).
var eventExchanges = [
  'task-defined'
  'task-pending'
  'task-running'
  'artifact-created'
  'task-completed'
  'task-failed'
  'task-exception'
  'task-group-resolved'
  'task-group-sealed'
  'task-group-stalled'   // ours: the verdicts of the watchdog (docs/watchdog.md)
]

resource serviceBus 'Microsoft.ServiceBus/namespaces@2024-01-01' = {
  name: '${appName}-events'
  location: location
  sku: { name: 'Standard', tier: 'Standard' }   // Basic has no topics
  properties: {
    minimumTlsVersion: '1.2'
    disableLocalAuth: true   // no SAS keys: the app signs in with its identity, people with theirs
  }
}

resource eventTopics 'Microsoft.ServiceBus/namespaces/topics@2024-01-01' = [for exchange in eventExchanges: {
  parent: serviceBus
  name: exchange
  properties: {
    // The outbox publishes an event again when it is not sure it was sent; each copy keeps
    // its message id, and the topic drops what it has seen within the window.
    requiresDuplicateDetection: true
    duplicateDetectionHistoryTimeWindow: eventsDuplicateWindow
    enableBatchedOperations: true
  }
}]

// serviceBusEndpoint is https://<name>.servicebus.windows.net:443/ (or a national cloud's
// suffix): the SDK wants the host alone.
var serviceBusHost = split(split(serviceBus.properties.serviceBusEndpoint, '//')[1], ':')[0]

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: appName
  location: location
  kind: 'functionapp,linux'
  identity: { type: 'SystemAssigned' }   // signs in to storage and Service Bus
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    // Flex Consumption takes the runtime here, not from FUNCTIONS_WORKER_RUNTIME or
    // linuxFxVersion (which it refuses).
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainerName}'
          authentication: { type: 'SystemAssignedIdentity' }
        }
      }
      scaleAndConcurrency: { maximumInstanceCount: maximumInstanceCount, instanceMemoryMB: 2048 }
      runtime: { name: 'python', version: '3.11' }
    }
    siteConfig: {
      ftpsState: 'Disabled'
      minTlsVersion: '1.2'
      appSettings: [
        { name: 'AzureWebJobsFeatureFlags', value: 'EnableWorkerIndexing' }
        // The storage account by name, reached with the app's identity (no connection
        // string, no key): the Functions host reads these, and so does the app
        // (shared/storage/client/identity.py).
        { name: 'AzureWebJobsStorage__accountName', value: storage.name }
        { name: 'AzureWebJobsStorage__credential', value: 'managedidentity' }
        { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: insights.properties.ConnectionString }
        { name: 'TASK_CLAIM_TIMEOUT', value: string(claimTimeoutSeconds) }
        { name: 'CLAIM_WORK_WAIT_SECONDS', value: '20' }
        { name: 'QUEUE_TABLE_PREFIX', value: '' }
        { name: 'QUEUE_CREDENTIALS_CLIENT_ID', value: credentialsClientId }
        { name: 'QUEUE_CREDENTIALS_ACCESS_TOKEN', value: credentialsAccessToken }
        { name: 'STATIC_CLIENTS', value: staticClients }
        { name: 'QUEUE_ROLES', value: roles }
        { name: 'QUEUE_ANONYMOUS_SCOPES', value: anonymousScopes }
        { name: 'QUEUE_RESOLVED_QUEUE', value: 'task-resolved' }
        { name: 'QUEUE_REPAIR_QUEUE', value: 'queue-repairs' }
        { name: 'QUEUE_GRAPH_QUEUE', value: 'task-graph-parts' }
        { name: 'QUEUE_REPAIR_DELAY_SECONDS', value: '60' }
        { name: 'QUEUE_ARTIFACTS_CONTAINER', value: artifactsContainer.name }
        { name: 'QUEUE_PUBLIC_URL', value: empty(publicUrl) ? 'https://${appName}.azurewebsites.net' : publicUrl }
        // The secrets' keys, read from Key Vault with the app's identity (see `secretsVault`).
        { name: 'SECRETS_ENCRYPTION_KEYS', value: '@Microsoft.KeyVault(SecretUri=${secretsKeys.properties.secretUri})' }
        // NCRONTAB with seconds. Each sweep reads only the time-index rows that came due.
        { name: 'QUEUE_REPAIR_SCHEDULE', value: '*/30 * * * * *' }
        { name: 'QUEUE_CLAIM_RESOLVER_SCHEDULE', value: '*/5 * * * * *' }
        { name: 'QUEUE_DEADLINE_RESOLVER_SCHEDULE', value: '*/5 * * * * *' }
        { name: 'QUEUE_EXPIRATION_SCHEDULE', value: '0 0 * * * *' }
        { name: 'QUEUE_WATCHDOG_SCHEDULE', value: '0 * * * * *' }
        { name: 'QUEUE_WATCHDOG_STALL_SECONDS', value: '600' }
        // A hook's scheduled fire is made at the first run after its time.
        { name: 'HOOKS_SCHEDULER_SCHEDULE', value: '*/10 * * * * *' }
        // The worker manager: wake-ups of one pool's provisioner, and the pass over every pool
        // that catches what they missed. Its local provider (worker processes beside the app)
        // is for `make run`; in Azure, workers are Container Apps job executions.
        { name: 'WORKER_MANAGER_QUEUE', value: 'worker-manager-wake-ups' }
        { name: 'WORKER_MANAGER_PROVISIONER_SCHEDULE', value: '*/15 * * * * *' }
        { name: 'WORKER_MANAGER_LOCAL_PROVIDER', value: 'false' }
        { name: 'WORKER_MANAGER_ACA_SUBSCRIPTION_ID', value: subscription().subscriptionId }
        { name: 'WORKER_MANAGER_ACA_RESOURCE_GROUP', value: resourceGroup().name }
        { name: 'WORKER_MANAGER_ACA_JOB_NAME', value: empty(workerImage) ? '' : workerJobName }
        { name: 'WORKER_MANAGER_ACA_LOCATION', value: location }
        { name: 'WORKER_MANAGER_ACA_IMAGE', value: workerImage }
        // Managed identity through DefaultAzureCredential; EVENTS_SERVICE_BUS_CONNECTION (a
        // connection string) is the alternative where a namespace keeps SAS keys.
        { name: 'EVENTS_SERVICE_BUS_NAMESPACE', value: serviceBusHost }
      ]
    }
  }
}

// The app's data roles on its storage account, and nothing more: no key, no management role.
// - Storage Table Data Contributor: the Queue's state (tables made on first use).
// - Storage Queue Data Contributor: its storage queues (made on first use), and the
//   Functions host's queue triggers reading and deleting their messages.
// - Storage Blob Data Owner: what the Functions host documents as the minimum for its own
//   storage (its keys, timer locks) and for the Flex deployment package; it covers the
//   artifacts' blobs and asking for user delegation keys (the artifact URLs), so neither
//   Storage Blob Data Contributor nor Storage Blob Delegator is assigned beside it.
var storageRoles = {
  tableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  queueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  blobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
}

resource appUsesStorage 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for role in items(storageRoles): {
  name: guid(storage.id, app.id, role.value)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.value)
    principalId: app.identity.principalId
    principalType: 'ServicePrincipal'
  }
}]

var serviceBusDataSender = '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39'   // built-in 'Azure Service Bus Data Sender'

resource appSendsEvents 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(serviceBus.id, app.id, serviceBusDataSender)
  scope: serviceBus
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', serviceBusDataSender)
    principalId: app.identity.principalId
    principalType: 'ServicePrincipal'
  }
}

// The browser view's feeds of a group's events (shared/events/service_bus_feed.py) make a
// queue and forwarding subscriptions per open page, which takes the Manage right: 'Azure
// Service Bus Data Owner'. Without this assignment the app still publishes, and the page
// polls listTaskGroup instead (the feed answers `live: false`).
var serviceBusDataOwner = '090c5cfd-751d-490a-894a-3ce6f1109419'   // built-in 'Azure Service Bus Data Owner'

resource appManagesFeeds 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(serviceBus.id, app.id, serviceBusDataOwner)
  scope: serviceBus
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', serviceBusDataOwner)
    principalId: app.identity.principalId
    principalType: 'ServicePrincipal'
  }
}

// People who listen to the events (`taskq listen --service-bus`): their listener makes a feed
// (a queue and forwarding subscriptions), as the browser view's feeds do, which takes the Manage right.
resource listenersReadEvents 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for principal in eventListenerPrincipalIds: {
  name: guid(serviceBus.id, principal, serviceBusDataOwner)
  scope: serviceBus
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', serviceBusDataOwner)
    principalId: principal
  }
}]

// -- The secrets service's keys (shared/services/secrets/encryption.py) -----------------------
// The setting SECRETS_ENCRYPTION_KEYS is a Key Vault reference to this vault's secret, which the
// app reads with its managed identity (the role below, and nothing more: it cannot list or
// write secrets). Rotating: `python -m shared.services.secrets.encryption new-key <keyId>`,
// put the new entry first in the secret's value and keep the old ones after it, deploy (or
// `az keyvault secret set`); the app reads the newest version when it restarts, and within a day.

@secure()
@description('SECRETS_ENCRYPTION_KEYS: `<keyId>:<base64 of 32 bytes>`, comma-separated, newest first (make one with `python -m shared.services.secrets.encryption new-key <keyId>`).')
param secretsEncryptionKeys string

resource secretsVault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: take('kv${uniqueString(resourceGroup().id, appName)}', 24)
  location: location
  properties: {
    tenantId: subscription().tenantId
    sku: { family: 'A', name: 'standard' }
    enableRbacAuthorization: true      // access by role assignments, no access policies
    enableSoftDelete: true
    softDeleteRetentionInDays: 90
    enablePurgeProtection: true        // a deleted key cannot be purged: secrets sealed with it stay readable
  }
}

resource secretsKeys 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: secretsVault
  name: 'secrets-encryption-keys'
  properties: {
    value: secretsEncryptionKeys
    contentType: 'text/plain; <keyId>:<base64 key>, newest first'
  }
}

var keyVaultSecretsUser = '4633458b-17de-408a-b874-0445c86b69e6'   // built-in 'Key Vault Secrets User'

resource appReadsSecretsKeys 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(secretsKeys.id, app.id, keyVaultSecretsUser)
  scope: secretsKeys   // this one secret, not the whole vault
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUser)
    principalId: app.identity.principalId
    principalType: 'ServicePrincipal'
  }
}

output rootUrl string = 'https://${app.properties.defaultHostName}'
output eventsNamespace string = serviceBusHost

// The worker manager's Container Apps environment, job and role (see worker-manager.bicep).
module workerManager 'worker-manager.bicep' = if (!empty(workerImage)) {
  name: 'worker-manager'
  params: { appName: appName, location: location, appPrincipalId: app.identity.principalId, workerImage: workerImage }
}

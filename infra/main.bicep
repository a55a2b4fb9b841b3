// The Queue's Azure resources: one storage account (tables, queues, blobs), a Linux
// Consumption plan running the Python Function App, and Application Insights for its logs.
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

var storageConnection = 'DefaultEndpointsProtocol=https;AccountName=${storage.name};EndpointSuffix=${environment().suffixes.storage};AccountKey=${storage.listKeys().keys[0].value}'

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: '${appName}-insights'
  location: location
  kind: 'web'
  properties: { Application_Type: 'web' }
}

resource plan 'Microsoft.Web/serverfarms@2023-12-01' = {
  name: '${appName}-plan'
  location: location
  sku: { name: 'Y1', tier: 'Dynamic' }
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

resource app 'Microsoft.Web/sites@2023-12-01' = {
  name: appName
  location: location
  kind: 'functionapp,linux'
  identity: { type: 'SystemAssigned' }   // signs in to Service Bus
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: {
      linuxFxVersion: 'Python|3.11'
      ftpsState: 'Disabled'
      minTlsVersion: '1.2'
      appSettings: [
        { name: 'FUNCTIONS_EXTENSION_VERSION', value: '~4' }
        { name: 'FUNCTIONS_WORKER_RUNTIME', value: 'python' }
        { name: 'AzureWebJobsFeatureFlags', value: 'EnableWorkerIndexing' }
        { name: 'AzureWebJobsStorage', value: storageConnection }
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
        // NCRONTAB with seconds. Each sweep reads only the time-index rows that came due.
        { name: 'QUEUE_REPAIR_SCHEDULE', value: '*/30 * * * * *' }
        { name: 'QUEUE_CLAIM_RESOLVER_SCHEDULE', value: '*/5 * * * * *' }
        { name: 'QUEUE_DEADLINE_RESOLVER_SCHEDULE', value: '*/5 * * * * *' }
        { name: 'QUEUE_EXPIRATION_SCHEDULE', value: '0 0 * * * *' }
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

output rootUrl string = 'https://${app.properties.defaultHostName}'
output eventsNamespace string = serviceBusHost

// The worker manager's Container Apps environment, job and role (see worker-manager.bicep).
module workerManager 'worker-manager.bicep' = if (!empty(workerImage)) {
  name: 'worker-manager'
  params: { appName: appName, location: location, appPrincipalId: app.identity.principalId, workerImage: workerImage }
}

// The Queue's Azure resources: one storage account (tables, queues, blobs), a Linux
// Consumption plan running the Python Function App, and Application Insights for its logs.
// Every app setting the app reads is set here; tests/infra checks that none is missing,
// because the Functions host refuses to start a trigger whose %SETTING% is unset.
//
//   az group create --name queue-rg --location westeurope
//   az deployment group create --resource-group queue-rg --template-file infra/main.bicep \
//       --parameters appName=myqueue credentialsAccessToken=<a long random secret> \
//                    staticClients='[{"clientId": "static/admin", "accessToken": "<secret>", "scopes": ["*"]}]'
//   func azure functionapp publish myqueue
//
// Service Bus (events) is added by the events capability; see ../shared/ROADMAP.md.

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

@secure()
@description('STATIC_CLIENTS: the clients every request is checked against, JSON [{clientId, accessToken, scopes}] (Taskcluster\'s format).')
param staticClients string

@description('QUEUE_ROLES: JSON [{roleId, scopes}], expanded through assume:<roleId>.')
param roles string = '[]'

@description('QUEUE_ANONYMOUS_SCOPES: JSON [scope] of callers without credentials; empty: Taskcluster\'s public reading.')
param anonymousScopes string = ''

@description('QUEUE_PUBLIC_URL: the origin clients call (https://queue.example.com) when a front end or custom domain stands before the app; empty: the Host and X-Forwarded-* headers.')
param publicUrl string = ''

var storageName = take('${toLower(replace(appName, '-', ''))}store', 24)

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

resource app 'Microsoft.Web/sites@2023-12-01' = {
  name: appName
  location: location
  kind: 'functionapp,linux'
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
        { name: 'QUEUE_PUBLIC_URL', value: publicUrl }
        { name: 'QUEUE_RESOLVED_QUEUE', value: 'task-resolved' }
        { name: 'QUEUE_REPAIR_QUEUE', value: 'queue-repairs' }
        { name: 'QUEUE_GRAPH_QUEUE', value: 'task-graph-parts' }
        { name: 'QUEUE_REPAIR_DELAY_SECONDS', value: '60' }
        // NCRONTAB with seconds. Each sweep reads only the time-index rows that came due.
        { name: 'QUEUE_REPAIR_SCHEDULE', value: '*/30 * * * * *' }
        { name: 'QUEUE_CLAIM_RESOLVER_SCHEDULE', value: '*/5 * * * * *' }
        { name: 'QUEUE_DEADLINE_RESOLVER_SCHEDULE', value: '*/5 * * * * *' }
        { name: 'QUEUE_EXPIRATION_SCHEDULE', value: '0 0 * * * *' }
      ]
    }
  }
}

output rootUrl string = 'https://${app.properties.defaultHostName}'

// The worker manager's azure-container-apps provider
// (shared/providers/azure_container_apps.py): a Container Apps
// environment, a manual-trigger job whose every execution is one worker, and the right of the
// Function App's managed identity to start, list and stop that job's executions, and nothing
// else. A module of main.bicep, deployed when main.bicep is given a `workerImage`; main.bicep
// sets the app's WORKER_MANAGER_ACA_* settings itself (the job's name computed as here), since
// the module takes the app's identity and the app cannot also wait for the module's outputs.

@description('Name of the Function App; also the prefix of these resources.')
@minLength(3)
@maxLength(40)
param appName string

param location string = resourceGroup().location

@description('Principal id of the Function App\'s system-assigned identity, which starts the executions.')
param appPrincipalId string

@description('The worker\'s container image (python -m taskq_worker), e.g. myregistry.azurecr.io/taskq-worker:1.')
param workerImage string

@description('Registry to pull the image from with the job\'s own identity (grant it AcrPull there); empty: a public image.')
param registryServer string = ''

@description('vCPUs of each worker (Container Apps pairs them with memory: 0.5 with 1Gi, 1.0 with 2Gi, ...).')
param workerCpu string = '0.5'

param workerMemory string = '1Gi'

@description('Longest life of one execution in seconds; a worker exits long before, when idle (workerConfig.idleTimeoutSecs).')
param replicaTimeoutSeconds int = 86400

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: '${appName}-workers-logs'
  location: location
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
  }
}

resource environment 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: '${appName}-workers'
  location: location
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: logs.properties.customerId
        sharedKey: logs.listKeys().primarySharedKey
      }
    }
    workloadProfiles: [ { name: 'Consumption', workloadProfileType: 'Consumption' } ]
  }
}

// Job names: at most 32 lower-case characters.
var jobName = take(toLower('${replace(appName, '_', '-')}-workers'), 32)

resource job 'Microsoft.App/jobs@2024-03-01' = {
  name: jobName
  location: location
  identity: { type: 'SystemAssigned' }   // pulls the image from registryServer
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      // Started only by the worker manager, one execution per worker.
      triggerType: 'Manual'
      manualTriggerConfig: { parallelism: 1, replicaCompletionCount: 1 }
      replicaTimeout: replicaTimeoutSeconds
      // Never restarted by Container Apps: a restarted container would present a spent
      // registration token. The provisioner starts a new worker instead.
      replicaRetryLimit: 0
      registries: empty(registryServer) ? [] : [ { server: registryServer, identity: 'system' } ]
    }
    template: {
      // Each execution overrides this container's environment with its worker's registration.
      containers: [
        {
          name: 'worker'
          image: workerImage
          resources: { cpu: json(workerCpu), memory: workerMemory }
        }
      ]
    }
  }
}

// Least privilege: exactly the operations the provider calls, assigned on this job alone.
var executionActions = [
  'Microsoft.App/jobs/start/action'            // jobs.begin_start
  'Microsoft.App/jobs/executions/read'         // jobs_executions.list
  'Microsoft.App/jobs/stop/execution/action'   // jobs.begin_stop_execution
]

resource executionsRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(resourceGroup().id, jobName, 'worker-manager-executions')
  properties: {
    roleName: 'Worker manager of ${jobName} (${resourceGroup().name})'
    description: 'Start, list and stop the executions of one Container Apps job: no write, no secrets, no other resource.'
    type: 'CustomRole'
    permissions: [ { actions: executionActions, notActions: [], dataActions: [], notDataActions: [] } ]
    assignableScopes: [ resourceGroup().id ]
  }
}

resource appStartsWorkers 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(job.id, appPrincipalId, executionsRole.id)
  scope: job
  properties: {
    roleDefinitionId: executionsRole.id
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

output subscriptionId string = subscription().subscriptionId
output resourceGroupName string = resourceGroup().name
output jobName string = job.name
output location string = location
output image string = workerImage
output jobPrincipalId string = job.identity.principalId

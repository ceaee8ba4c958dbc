import { CfnOutput, Fn, Stack } from 'aws-cdk-lib'
import type * as ecs from 'aws-cdk-lib/aws-ecs'
import type { Construct } from 'constructs'
import type { DashboardService } from './dashboard-service.js'
import type { LoadAgents } from './load-agents.js'
import type { Operations } from './observability/operations.js'
import type { PublicEntry } from './public-entry.js'
import type { Storage } from './storage.js'
import type { SyncService } from './sync-service.js'

/** The parts of a `Symphony` construct (the construct itself) the outputs name. */
export interface OutputParts extends Construct {
  entry: PublicEntry
  storage: Storage
  dashboard: DashboardService
  operations: Operations
  cluster: ecs.ICluster
  sync: SyncService
  loadAgents: LoadAgents | undefined
}

/**
 * What a deployer reads after `cdk deploy`: the URLs, resource names, the names (never the values)
 * of the secrets they fetch, and what `symphony-loadtest ecs` takes.
 */
export function addSymphonyOutputs(symphony: OutputParts, domainName: string | undefined): void {
  const urls = symphony.entry.urls(domainName)
  const output = (name: string, value: string, description: string) =>
    new CfnOutput(symphony, name, { value, description })
  output('WebSocketUrl', urls.webSocket, 'Point the client library (createClient({ url })) here')
  output('DashboardUrl', urls.dashboard, 'The operators’ dashboard; sign in with the DashboardTokenSecret')
  output(
    'SnapshotsBucketName',
    symphony.storage.snapshotsBucket.bucketName,
    'Room snapshots (<room>.ybin under rooms/)',
  )
  output('RegistryTableName', symphony.storage.registryTable.tableName, 'Which sync server holds which room')
  output(
    'DashboardTokenSecret',
    symphony.dashboard.token.secretArn,
    'aws secretsmanager get-secret-value --secret-id <this>',
  )
  output(
    'OperationsDashboardUrl',
    `https://console.aws.amazon.com/cloudwatch/home?region=${Stack.of(symphony).region}#dashboards:name=${symphony.operations.dashboard.dashboardName}`,
    'The CloudWatch dashboard: alarms, users, rooms, latency, the managed parts',
  )
  output('AlarmTopicArn', symphony.operations.topic.topicArn, 'Every alarm notifies this SNS topic')
  output(
    'ClusterName',
    symphony.cluster.clusterName,
    'The ECS cluster (ECS Exec and SSM port forwarding; symphony-loadtest ecs --cluster)',
  )
  output(
    'DashboardServiceName',
    symphony.dashboard.service.serviceName,
    'The dashboard service (aws ecs list-tasks --service-name <this>)',
  )
  if (symphony.loadAgents) {
    const agents = symphony.loadAgents
    output(
      'LoadAgentTaskDefinitionArn',
      agents.task.taskDefinitionArn,
      'symphony-loadtest ecs --task-definition',
    )
    output('LoadAgentSubnetIds', Fn.join(',', agents.subnetIds), 'symphony-loadtest ecs --subnets')
    output(
      'LoadAgentSecurityGroupId',
      agents.securityGroup.securityGroupId,
      'symphony-loadtest ecs --security-groups',
    )
    output(
      'LoadAgentRunPolicyArn',
      agents.runPolicy.managedPolicyArn,
      'Attach to whoever runs symphony-loadtest ecs',
    )
  }
  // The name, not the ARN's value nor the secret's: whoever may read it fetches it themselves.
  output(
    'ApiSecretName',
    symphony.sync.apiSecretName,
    'The REST API bearer secret: aws secretsmanager get-secret-value --secret-id <this>',
  )
  if (symphony.sync.webhookKey) {
    output(
      'WebhookSigningKeyName',
      symphony.sync.webhookKeyName,
      'Receivers verify webhooks with whsec_ followed by this secret’s value',
    )
  }
  if (symphony.sync.authSecret) {
    output(
      'AuthSecret',
      symphony.sync.authSecret.secretArn,
      'The HS256 key your backend signs room tokens with',
    )
  }
}

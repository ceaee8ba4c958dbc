import { Duration, Stack, Validations } from 'aws-cdk-lib'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2'
import * as logs from 'aws-cdk-lib/aws-logs'
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager'
import { Construct } from 'constructs'
import { generatedSecret, grantSnapshots } from './access.js'
import type { Database } from './database.js'
import { containerHealthCheck, containerLogs, fargateTask, privateService } from './fargate.js'
import { MetricsCollector } from './observability/collector.js'
import { DASHBOARD_METRICS } from './observability/metrics.js'
import type { Storage } from './storage.js'
import type { SyncService } from './sync-service.js'

export interface DashboardServiceProps {
  /** The dashboard image, for the tasks' CPU architecture. */
  image: ecs.ContainerImage
  cluster: ecs.ICluster
  subnets: ec2.SubnetSelection
  listener: elbv2.ApplicationListener
  storage: Storage
  database: Database
  sync: SyncService
  cpu: number
  memoryMiB: number
  /** The CloudWatch namespace the metrics sidecar publishes the dashboard's series to. */
  metricsNamespace: string
  /** The name operators open the dashboard at, if not the load balancer's. */
  domainName: string | undefined
  /** More `Host` names it answers (`DASHBOARD_ALLOWED_HOSTS`), comma-separated; `*`: any. */
  allowedHosts: string | undefined
}

export const DASHBOARD_PORT = 3000
/** The container operators forward port 3000 from (ECS Exec's target, see docs/operations.md). */
export const DASHBOARD_CONTAINER = 'dashboard'

/**
 * The operators' dashboard: one Fargate task on its own listener, behind `DASHBOARD_TOKEN`. ECS Exec
 * is on, so operators without a listener rule (the default) reach it through SSM port forwarding.
 */
export class DashboardService extends Construct {
  public readonly service: ecs.FargateService
  public readonly securityGroup: ec2.SecurityGroup
  /** The token operators sign in with. */
  public readonly token: secretsmanager.Secret
  public readonly targetGroup: elbv2.ApplicationTargetGroup

  constructor(scope: Construct, id: string, props: DashboardServiceProps) {
    super(scope, id)
    const { storage, database, sync } = props
    this.token = generatedSecret(
      this,
      'Token',
      'Symphony DASHBOARD_TOKEN: sign in to the dashboard with it',
      40,
    )
    const task = fargateTask(this, props.cpu, props.memoryMiB)
    // The SSM agent ECS Exec runs in the container writes its state and logs here; the root stays read-only.
    const agentFolders = ['/var/lib/amazon', '/var/log/amazon']
    for (const [index] of agentFolders.entries()) task.addVolume({ name: `ssm-agent-${index}` })
    const container = task.addContainer(DASHBOARD_CONTAINER, {
      image: props.image,
      environment: {
        NODE_ENV: 'production',
        DASHBOARD_PORT: String(DASHBOARD_PORT),
        DASHBOARD_HOST: '0.0.0.0',
        // The names of its listener (loopback ones are always answered: SSM port forwarding, the
        // health checks, the metrics sidecar), so a rebound name reaches nothing even with a token.
        DASHBOARD_ALLOWED_HOSTS: allowedHostsOf(props),
        DATABASE_URL: database.url,
        SNAPSHOTS: storage.snapshotsUrl,
        AWS_REGION: Stack.of(this).region,
      },
      secrets: {
        DASHBOARD_TOKEN: ecs.Secret.fromSecretsManager(this.token),
        INTERNAL_TOKEN: ecs.Secret.fromSecretsManager(sync.internalToken),
        DATABASE_PASSWORD: ecs.Secret.fromSecretsManager(database.secret, 'password'),
      },
      portMappings: [{ containerPort: DASHBOARD_PORT, name: 'http' }],
      healthCheck: containerHealthCheck('DASHBOARD_PORT', DASHBOARD_PORT),
      readonlyRootFilesystem: true,
      logging: containerLogs(this, 'dashboard', logs.RetentionDays.ONE_MONTH),
    })
    container.addMountPoints(
      ...agentFolders.map((containerPath, index) => ({
        sourceVolume: `ssm-agent-${index}`,
        containerPath,
        readOnly: false,
      })),
    )
    new MetricsCollector(this, 'Metrics', {
      task,
      cluster: props.cluster,
      port: DASHBOARD_PORT,
      service: 'dashboard',
      namespace: props.metricsNamespace,
      metrics: DASHBOARD_METRICS,
    })
    // Reads only: rooms' snapshots and the registry; it never writes either.
    grantSnapshots(task.taskRole, storage, ['s3:GetObject'])
    storage.registryTable.grantReadData(task.taskRole)

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.cluster.vpc,
      description: 'Symphony dashboard',
      allowAllOutbound: true,
    })
    this.service = privateService(this, {
      cluster: props.cluster,
      task,
      subnets: props.subnets,
      securityGroup: this.securityGroup,
      desiredCount: 1,
      loadBalanced: true,
      enableExecuteCommand: true,
    })
    Validations.of(task.taskRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'ECS Exec (SSM port forwarding to the dashboard) needs the ssmmessages channel actions, which ' +
        'have no resource-level permissions; AWS documents them with Resource "*".',
    })
    database.allowFrom(this.securityGroup, 'metadata reads from the dashboard')
    sync.allowInternalFrom(this.securityGroup, 'live room documents for the dashboard')

    // The target group lives here, not under the listener (as listener.addTargets would put it):
    // the service depends on the listener, and a group inside it made that DependsOn also name the
    // group the service already Refs (cfn-lint W3005).
    this.targetGroup = new elbv2.ApplicationTargetGroup(this, 'Targets', {
      vpc: props.cluster.vpc,
      targetType: elbv2.TargetType.IP,
      protocol: elbv2.ApplicationProtocol.HTTP,
      port: DASHBOARD_PORT,
      targets: [
        this.service.loadBalancerTarget({
          containerName: container.containerName,
          containerPort: DASHBOARD_PORT,
        }),
      ],
      healthCheck: { path: '/healthz', healthyHttpCodes: '200', interval: Duration.seconds(15) },
      deregistrationDelay: Duration.seconds(10),
    })
    props.listener.addTargetGroups('Dashboard', { targetGroups: [this.targetGroup] })
  }
}

/** The dashboard's `DASHBOARD_ALLOWED_HOSTS`: its listener's names and the deployer's, or `*`. */
function allowedHostsOf(props: DashboardServiceProps): string {
  if (props.allowedHosts?.trim() === '*') return '*'
  const names = [props.listener.loadBalancer.loadBalancerDnsName]
  if (props.domainName) names.push(props.domainName)
  if (props.allowedHosts) names.push(...props.allowedHosts.split(',').map((name) => name.trim()))
  return names.join(',')
}

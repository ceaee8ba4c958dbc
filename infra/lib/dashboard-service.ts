import { Duration, Stack } from 'aws-cdk-lib'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2'
import * as logs from 'aws-cdk-lib/aws-logs'
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager'
import { Construct } from 'constructs'
import { generatedSecret, grantSnapshots } from './access.js'
import type { Database } from './database.js'
import {
  containerHealthCheck,
  containerLogs,
  fargateTask,
  imageFromRepository,
  privateService,
} from './fargate.js'
import type { Storage } from './storage.js'
import type { SyncService } from './sync-service.js'

export interface DashboardServiceProps {
  cluster: ecs.ICluster
  subnets: ec2.SubnetSelection
  listener: elbv2.ApplicationListener
  storage: Storage
  database: Database
  sync: SyncService
  cpu: number
  memoryMiB: number
}

const DASHBOARD_PORT = 3000

/** The operators' dashboard: one Fargate task on its own listener, behind `DASHBOARD_TOKEN`. */
export class DashboardService extends Construct {
  public readonly service: ecs.FargateService
  public readonly securityGroup: ec2.SecurityGroup
  /** The token operators sign in with. */
  public readonly token: secretsmanager.Secret

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
    const container = task.addContainer('dashboard', {
      image: imageFromRepository('dashboard-server/Dockerfile'),
      environment: {
        NODE_ENV: 'production',
        DASHBOARD_PORT: String(DASHBOARD_PORT),
        DASHBOARD_HOST: '0.0.0.0',
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
    })
    database.allowFrom(this.securityGroup, 'metadata reads from the dashboard')
    sync.allowInternalFrom(this.securityGroup, 'live room documents for the dashboard')

    props.listener.addTargets('Dashboard', {
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
  }
}

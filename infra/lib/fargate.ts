import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Duration, Validations } from 'aws-cdk-lib'
import type * as ec2 from 'aws-cdk-lib/aws-ec2'
import { Platform } from 'aws-cdk-lib/aws-ecr-assets'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as logs from 'aws-cdk-lib/aws-logs'
import type { Construct } from 'constructs'
import type { CpuArchitectureName } from './sizes.js'

/** The images build from the repository root (their packages share code); `.dockerignore` trims it. */
const REPOSITORY_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The one Dockerfile of every service image, relative to the repository root; a target per service. */
export const DOCKERFILE = 'infra/Dockerfile'

/** The Dockerfile's final stages, one per image. */
export type ImageTarget = 'sync-server' | 'dashboard' | 'load-agent'

export interface RepositoryImageOptions {
  target: ImageTarget
  /** Must match the task's runtime platform (`architectureOf(scope)`). */
  architecture: CpuArchitectureName
}

/**
 * Throws when `targets` would be built from the repository and there is none: an installed
 * @symphony/infra has no repository beside it to build from.
 */
export function assertRepositoryImages(targets: ImageTarget[]): void {
  if (targets.length === 0 || existsSync(join(REPOSITORY_ROOT, DOCKERFILE))) return
  throw Object.assign(
    new Error(
      `Symphony images: no ${DOCKERFILE} in ${REPOSITORY_ROOT} to build ${targets.join(', ')} from; ` +
        'outside a checkout of the repository pass prebuilt images (props.images, docs/deploy.md)',
    ),
    { code: 'SYMPHONY_IMAGES_MISSING' },
  )
}

/**
 * An image built by `cdk deploy` from one target of the repository's Dockerfile, for the tasks'
 * CPU architecture. Synthesis only stages the files: no Docker needed until deploy.
 */
export function imageFromRepository({ target, architecture }: RepositoryImageOptions): ecs.ContainerImage {
  return ecs.ContainerImage.fromAsset(REPOSITORY_ROOT, {
    file: DOCKERFILE,
    target,
    platform: architecture === 'arm64' ? Platform.LINUX_ARM64 : Platform.LINUX_AMD64,
  })
}

/** The construct-tree context key under which the stack records its tasks' CPU architecture. */
export const ARCHITECTURE_CONTEXT_KEY = 'symphony:cpuArchitecture'

/** The CPU architecture of the tasks under `scope` (set by the `Symphony` construct from `cpuArchitecture`). */
export function architectureOf(scope: Construct): CpuArchitectureName {
  const value = scope.node.tryGetContext(ARCHITECTURE_CONTEXT_KEY)
  return value === 'arm64' ? 'arm64' : 'x86_64'
}

/**
 * The images' health check, the same command their Dockerfiles declare (ECS ignores those):
 * `portVariable` names the environment variable holding the port.
 */
export function containerHealthCheck(portVariable: string, port: number): ecs.HealthCheck {
  return {
    command: ['CMD', 'node', 'server/dist/healthcheck.js', portVariable, String(port)],
    interval: Duration.seconds(15),
    timeout: Duration.seconds(5),
    startPeriod: Duration.seconds(30),
    retries: 3,
  }
}

/**
 * A Linux task definition on the stack's CPU architecture (x86-64 unless `cpuArchitecture=arm64`),
 * with the two cdk-nag findings every one of ours shares acknowledged.
 */
export function fargateTask(scope: Construct, cpu: number, memoryMiB: number): ecs.FargateTaskDefinition {
  const task = new ecs.FargateTaskDefinition(scope, 'Task', {
    cpu,
    memoryLimitMiB: memoryMiB,
    runtimePlatform: {
      cpuArchitecture:
        architectureOf(scope) === 'arm64' ? ecs.CpuArchitecture.ARM64 : ecs.CpuArchitecture.X86_64,
      operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
    },
  })
  Validations.of(task.obtainExecutionRole()).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'ecr:GetAuthorizationToken has no resource-level permissions; the image pull itself is scoped ' +
      'to the asset repository by CDK.',
  })
  Validations.of(task).acknowledge({
    id: 'AwsSolutions-ECS2',
    reason: 'Only non-secret settings are environment variables; every secret comes through `secrets`.',
  })
  return task
}

/** Container output to CloudWatch Logs, kept for `retention`. */
export function containerLogs(
  scope: Construct,
  streamPrefix: string,
  retention: logs.RetentionDays,
): ecs.LogDriver {
  return ecs.LogDrivers.awsLogs({ streamPrefix, logGroup: new logs.LogGroup(scope, 'Logs', { retention }) })
}

export interface PrivateServiceProps {
  cluster: ecs.ICluster
  task: ecs.FargateTaskDefinition
  subnets: ec2.SubnetSelection
  securityGroup: ec2.ISecurityGroup
  /** Unset: the autoscaler decides. */
  desiredCount?: number
  /** Behind a load balancer, new tasks get a minute before failed health checks count. */
  loadBalanced: boolean
  /** ECS Exec (and so SSM port forwarding) into the tasks. */
  enableExecuteCommand?: boolean
}

/**
 * A service in the private subnets, without public addresses, that starts new tasks before stopping
 * old ones and rolls a deploy back when its tasks keep failing.
 */
export function privateService(scope: Construct, props: PrivateServiceProps): ecs.FargateService {
  return new ecs.FargateService(scope, 'Service', {
    cluster: props.cluster,
    taskDefinition: props.task,
    desiredCount: props.desiredCount,
    vpcSubnets: props.subnets,
    securityGroups: [props.securityGroup],
    assignPublicIp: false,
    minHealthyPercent: 100,
    maxHealthyPercent: 200,
    circuitBreaker: { rollback: true },
    healthCheckGracePeriod: props.loadBalanced ? Duration.seconds(60) : undefined,
    enableExecuteCommand: props.enableExecuteCommand,
  })
}

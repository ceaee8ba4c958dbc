import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as logs from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { containerLogs, fargateTask, privateService } from './fargate.js'

export interface LoadAgentsProps {
  cluster: ecs.ICluster
  subnets: ec2.SubnetSelection
  count: number
  /** The load harness's coordinator, which the agents dial and take their rooms from. */
  coordinatorUrl: string
  /** The load harness image (`loadtest/Dockerfile`, whose entry point is the `loadtest` CLI). */
  image: ecs.ContainerImage
}

/**
 * Off by default. Fargate tasks running `loadtest agent --coordinator <url>`, for load runs larger
 * than one machine can drive. They only dial out: nothing reaches them.
 */
export class LoadAgents extends Construct {
  public readonly service: ecs.FargateService

  constructor(scope: Construct, id: string, props: LoadAgentsProps) {
    super(scope, id)
    const task = fargateTask(this, 1024, 2048)
    task.addContainer('agent', {
      image: props.image,
      command: ['agent', '--coordinator', props.coordinatorUrl],
      // Each virtual user holds a socket.
      ulimits: [{ name: ecs.UlimitName.NOFILE, softLimit: 65535, hardLimit: 65535 }],
      readonlyRootFilesystem: true,
      logging: containerLogs(this, 'load-agent', logs.RetentionDays.ONE_WEEK),
    })
    const securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.cluster.vpc,
      description: 'Symphony load agents: outbound only',
      allowAllOutbound: true,
    })
    this.service = privateService(this, {
      cluster: props.cluster,
      task,
      subnets: props.subnets,
      securityGroup,
      desiredCount: props.count,
      loadBalanced: false,
    })
  }
}

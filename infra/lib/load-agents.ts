import { Stack, Token, Validations } from 'aws-cdk-lib'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as logs from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { containerLogs, fargateTask } from './fargate.js'

export interface LoadAgentsProps {
  cluster: ecs.ICluster
  subnets: ec2.SubnetSelection
  /** The load harness image (`infra/Dockerfile`'s `load-agent` target, whose entry point is the `symphony-loadtest` CLI). */
  image: ecs.ContainerImage
}

/**
 * Off by default. What `symphony-loadtest ecs` needs to start load agents for one run and stop them
 * after it: a task definition (container `agent`), a security group that lets nothing in, the
 * subnets to run in, and a managed policy for whoever runs the CLI. No service: nothing runs, or is
 * billed, between runs. The CLI gives each task its command and the coordinator's address.
 */
export class LoadAgents extends Construct {
  public readonly task: ecs.FargateTaskDefinition
  public readonly securityGroup: ec2.SecurityGroup
  public readonly subnetIds: string[]
  /** ecs:RunTask on this task definition, StopTask and DescribeTasks in the cluster, PassRole on its roles. */
  public readonly runPolicy: iam.ManagedPolicy

  constructor(scope: Construct, id: string, props: LoadAgentsProps) {
    super(scope, id)
    this.task = fargateTask(this, 1024, 2048)
    this.task.addContainer('agent', {
      image: props.image,
      // Each virtual user holds a socket.
      ulimits: [{ name: ecs.UlimitName.NOFILE, softLimit: 65535, hardLimit: 65535 }],
      readonlyRootFilesystem: true,
      logging: containerLogs(this, 'load-agent', logs.RetentionDays.ONE_WEEK),
    })
    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.cluster.vpc,
      description: 'Symphony load agents: outbound only',
      allowAllOutbound: true,
    })
    this.subnetIds = props.cluster.vpc.selectSubnets(props.subnets).subnetIds

    const inCluster = { ArnEquals: { 'ecs:cluster': props.cluster.clusterArn } }
    const tasksOfCluster = Stack.of(this).formatArn({
      service: 'ecs',
      resource: 'task',
      resourceName: `${props.cluster.clusterName}/*`,
    })
    this.runPolicy = new iam.ManagedPolicy(this, 'RunPolicy', {
      description: 'Run Symphony load agents on demand: symphony-loadtest ecs',
      statements: [
        new iam.PolicyStatement({
          actions: ['ecs:RunTask'],
          resources: [this.task.taskDefinitionArn],
          conditions: inCluster,
        }),
        new iam.PolicyStatement({
          actions: ['ecs:StopTask', 'ecs:DescribeTasks'],
          resources: [tasksOfCluster],
          conditions: inCluster,
        }),
        new iam.PolicyStatement({
          actions: ['iam:PassRole'],
          resources: [this.task.taskRole.roleArn, this.task.obtainExecutionRole().roleArn],
        }),
      ],
    })
    Validations.of(this.runPolicy).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagTasksArn(props.cluster)}]`,
      reason:
        'Task ARNs are only known once RunTask returns: StopTask and DescribeTasks cover the tasks of ' +
        'this one cluster (task/<cluster>/*, with an ecs:cluster condition).',
    })
  }
}

/** The tasks' ARN as cdk-nag names it in a finding: pseudo parameters as <AWS::…>, the cluster as <its logical id>. */
function nagTasksArn(cluster: ecs.ICluster): string {
  const stack = Stack.of(cluster)
  const clusterId = stack.getLogicalId(cluster.node.defaultChild as ecs.CfnCluster)
  const named = (value: string, pseudo: string) => (Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value)
  const partition = named(stack.partition, 'Partition')
  return `arn:${partition}:ecs:${named(stack.region, 'Region')}:${named(stack.account, 'AccountId')}:task/<${clusterId}>/*`
}

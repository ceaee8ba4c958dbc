import { App, Stack, Validations } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import { AwsSolutionsChecks } from 'cdk-nag'
import { Symphony } from '../../lib/symphony.js'
import type { SymphonyProps } from '../../lib/symphony-props.js'
import { CDK_JSON_CONTEXT } from './synthesize.js'

export const PUBLIC = ['subnet-0aaa1111111111111', 'subnet-0aaa2222222222222']
export const PRIVATE = ['subnet-0bbb1111111111111', 'subnet-0bbb2222222222222']
export const ISOLATED = ['subnet-0ccc1111111111111', 'subnet-0ccc2222222222222']

/** A stack of someone else's with an imported three-tier VPC and the construct in it, cdk-nag on. */
export function inOtherStack(props: Omit<SymphonyProps, 'vpc'>): { template: Template; stack: Stack } {
  const app = new App({ context: { ...CDK_JSON_CONTEXT, 'aws:cdk:disable-asset-staging': true } })
  const stack = new Stack(app, 'Existing', { env: { account: '123456789012', region: 'eu-west-1' } })
  const vpc = ec2.Vpc.fromVpcAttributes(stack, 'Vpc', {
    vpcId: 'vpc-0123456789abcdef0',
    availabilityZones: ['eu-west-1a', 'eu-west-1b'],
    publicSubnetIds: PUBLIC,
    publicSubnetRouteTableIds: ['rtb-01', 'rtb-02'],
    privateSubnetIds: PRIVATE,
    privateSubnetRouteTableIds: ['rtb-03', 'rtb-04'],
    isolatedSubnetIds: ISOLATED,
    isolatedSubnetRouteTableIds: ['rtb-05', 'rtb-06'],
  })
  new Symphony(stack, 'Collab', { vpc, ...props })
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app))
  const assembly = app.synth()
  return { template: Template.fromJSON(assembly.getStackByName('Existing').template), stack }
}

export const prebuilt = {
  sync: ecs.ContainerImage.fromRegistry('public.ecr.aws/example/symphony-sync:1'),
  dashboard: ecs.ContainerImage.fromRegistry('public.ecr.aws/example/symphony-dashboard:1'),
  loadAgent: ecs.ContainerImage.fromRegistry('public.ecr.aws/example/symphony-load-agent:1'),
}

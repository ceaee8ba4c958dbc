import { Symphony } from '@symphony/infra'
import { App, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib'
import * as acm from 'aws-cdk-lib/aws-certificatemanager'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecr from 'aws-cdk-lib/aws-ecr'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import { AwsSolutionsChecks } from 'cdk-nag'

const app = new App()
const stack = new Stack(app, 'Collaboration', { env: { account: '123456789012', region: 'eu-west-1' } })

// The VPC your other services already run in: public subnets with a route to the internet
// gateway, private ones with a NAT gateway.
const vpc = ec2.Vpc.fromVpcAttributes(stack, 'Vpc', {
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  availabilityZones: ['eu-west-1a', 'eu-west-1b'],
  publicSubnetIds: ['subnet-0aaa1111111111111', 'subnet-0aaa2222222222222'],
  publicSubnetRouteTableIds: ['rtb-0aaa1111111111111', 'rtb-0aaa2222222222222'],
  privateSubnetIds: ['subnet-0bbb1111111111111', 'subnet-0bbb2222222222222'],
  privateSubnetRouteTableIds: ['rtb-0bbb1111111111111', 'rtb-0bbb2222222222222'],
})

// Images built from infra/Dockerfile and pushed to ECR beforehand (see "Prebuilt images").
const images = ecr.Repository.fromRepositoryName(stack, 'Images', 'symphony')

new Symphony(stack, 'Symphony', {
  vpc,
  // This VPC has no isolated subnets: Redis and Postgres go into the private ones.
  subnets: { data: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS } },
  size: 'medium',
  sync: { minTasks: 3, maxTasks: 12 },
  certificate: acm.Certificate.fromCertificateArn(
    stack,
    'Certificate',
    'arn:aws:acm:eu-west-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-123456789abc',
  ),
  domainName: 'collab.example.com',
  alarmEmail: 'ops@example.com',
  tags: { team: 'collaboration', 'cost-center': '4711' },
  removalPolicy: RemovalPolicy.RETAIN,
  images: {
    sync: ecs.ContainerImage.fromEcrRepository(images, 'sync-server-0.1.0'),
    dashboard: ecs.ContainerImage.fromEcrRepository(images, 'dashboard-0.1.0'),
  },
})

// cdk-nag's AWS Solutions checks: the construct acknowledges its own findings, each with a reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app))

import * as ec2 from 'aws-cdk-lib/aws-ec2'
import type * as s3 from 'aws-cdk-lib/aws-s3'
import { Construct } from 'constructs'

export interface NetworkProps {
  natGateways: number
  /** Where the VPC flow logs go. */
  logsBucket: s3.IBucket
}

/** Where each part goes in a VPC: the subnet types this VPC makes, and what an existing one is assumed to have. */
export const DEFAULT_SUBNETS = {
  /** The load balancer and the NAT gateways. */
  public: { subnetType: ec2.SubnetType.PUBLIC },
  tasks: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
  /** Redis, MemoryDB and Postgres: no route out. */
  data: { subnetType: ec2.SubnetType.PRIVATE_ISOLATED },
} as const satisfies Record<string, ec2.SubnetSelection>

/**
 * A VPC over two availability zones: public subnets hold only the load balancer and the NAT
 * gateways; tasks run in private subnets; Redis and Postgres sit in isolated subnets with no route
 * to the internet at all.
 */
export class Network extends Construct {
  public readonly vpc: ec2.Vpc
  public readonly taskSubnets = DEFAULT_SUBNETS.tasks
  public readonly dataSubnets = DEFAULT_SUBNETS.data

  constructor(scope: Construct, id: string, props: NetworkProps) {
    super(scope, id)
    this.vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: props.natGateways,
      restrictDefaultSecurityGroup: false,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        { name: 'tasks', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 20 },
        { name: 'data', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 },
      ],
      // S3 and DynamoDB traffic stays on AWS's network and skips the NAT gateway's per-GB charge.
      gatewayEndpoints: {
        S3: { service: ec2.GatewayVpcEndpointAwsService.S3 },
        DynamoDB: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB },
      },
      flowLogs: {
        FlowLogsToS3: {
          destination: ec2.FlowLogDestination.toS3(props.logsBucket, 'vpc-flow-logs/'),
          trafficType: ec2.FlowLogTrafficType.REJECT,
        },
      },
    })
  }
}

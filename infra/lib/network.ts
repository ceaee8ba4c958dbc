import * as ec2 from 'aws-cdk-lib/aws-ec2'
import type * as s3 from 'aws-cdk-lib/aws-s3'
import { Construct } from 'constructs'

export interface NetworkProps {
  natGateways: number
  /** Where the VPC flow logs go. */
  logsBucket: s3.IBucket
}

/**
 * A VPC over two availability zones: public subnets hold only the load balancer and the NAT
 * gateways; tasks run in private subnets; Redis and Postgres sit in isolated subnets with no route
 * to the internet at all.
 */
export class Network extends Construct {
  public readonly vpc: ec2.Vpc
  public readonly taskSubnets: ec2.SubnetSelection = { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS }
  public readonly dataSubnets: ec2.SubnetSelection = { subnetType: ec2.SubnetType.PRIVATE_ISOLATED }

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

import { Validations } from 'aws-cdk-lib'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as elasticache from 'aws-cdk-lib/aws-elasticache'
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager'
import { Construct } from 'constructs'

export interface CacheProps {
  vpc: ec2.IVpc
  subnets: ec2.SelectedSubnets
  nodeType: string
  /** Read replicas in the other zone; with one or more, a failed primary fails over by itself. */
  replicas: number
}

/** Not 6379: scanners probe the default port first. */
const REDIS_PORT = 6380

/**
 * ElastiCache Redis for the sync servers' update journal (Redis Streams), unless the journal is on
 * MemoryDB: private, TLS in transit, encrypted at rest, and an AUTH token kept in Secrets Manager.
 */
export class Cache extends Construct {
  public readonly securityGroup: ec2.SecurityGroup
  /**
   * `PUBSUB` for the sync servers (the cluster's Redis, which holds their journal); the token goes
   * separately as `PUBSUB_PASSWORD`.
   */
  public readonly url: string
  public readonly authToken: secretsmanager.Secret
  public readonly replicationGroup: elasticache.CfnReplicationGroup
  /** The member clusters' ids (`<group>-001`, …), one node each: the dimension of their metrics. */
  public readonly nodeClusterIds: string[]

  constructor(scope: Construct, id: string, props: CacheProps) {
    super(scope, id)
    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: 'Symphony Redis: reachable only from the sync servers',
      allowAllOutbound: false,
    })
    this.authToken = new secretsmanager.Secret(this, 'AuthToken', {
      description: 'Symphony Redis AUTH token',
      // ElastiCache allows 16-128 printable characters, minus a few: letters and digits are safe.
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    })
    Validations.of(this.authToken).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'ElastiCache changes an AUTH token through its own ROTATE strategy, which a Secrets Manager ' +
        'rotation cannot drive; docs/operations.md explains rotating it by hand with a rolling deploy.',
    })
    const subnetGroup = new elasticache.CfnSubnetGroup(this, 'Subnets', {
      description: 'Symphony Redis: isolated subnets',
      subnetIds: props.subnets.subnetIds,
    })
    const failover = props.replicas > 0
    const group = new elasticache.CfnReplicationGroup(this, 'Redis', {
      replicationGroupDescription: 'Symphony update journal (Redis Streams)',
      engine: 'redis',
      engineVersion: '7.1',
      cacheNodeType: props.nodeType,
      numCacheClusters: 1 + props.replicas,
      automaticFailoverEnabled: failover,
      multiAzEnabled: failover,
      port: REDIS_PORT,
      transitEncryptionEnabled: true,
      atRestEncryptionEnabled: true,
      authToken: this.authToken.secretValue.unsafeUnwrap(), // a dynamic reference, resolved by CloudFormation
      cacheSubnetGroupName: subnetGroup.ref,
      securityGroupIds: [this.securityGroup.securityGroupId],
      autoMinorVersionUpgrade: true,
    })
    if (!failover) {
      Validations.of(group).acknowledge({
        id: 'AwsSolutions-AEC4',
        reason:
          'The small size runs one node to stay cheap to try; the medium and large sizes (or ' +
          'redisReplicas >= 1) add a replica in the other zone with automatic failover.',
      })
    }
    this.replicationGroup = group
    this.nodeClusterIds = Array.from(
      { length: 1 + props.replicas },
      (_, i) => `${group.ref}-${String(i + 1).padStart(3, '0')}`,
    )
    this.url = `rediss://${group.attrPrimaryEndPointAddress}:${group.attrPrimaryEndPointPort}`
  }

  /** Lets `peer` open Redis connections. */
  allowFrom(peer: ec2.ISecurityGroup): void {
    this.securityGroup.addIngressRule(peer, ec2.Port.tcp(REDIS_PORT), 'Redis from the sync servers')
  }
}

import { createHash } from 'node:crypto'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as memorydb from 'aws-cdk-lib/aws-memorydb'
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager'
import { Construct } from 'constructs'
import { generatedSecret } from './access.js'

export interface JournalStoreProps {
  /** The deployment's name, which the cluster's, ACL's and user's names start with. */
  name: string
  vpc: ec2.IVpc
  subnets: ec2.SelectedSubnets
  /** A MemoryDB node type, such as `db.t4g.small`. */
  nodeType: string
  shards: number
  /** Replicas per shard, at least one: a lost primary's zone has a copy to fail over to. */
  replicas: number
}

const PORT = 6379
/** The journal's keys (the server's default prefix), the only ones its user may touch. */
const ACCESS_STRING = 'on ~symphony:* &* +@all'

/**
 * Amazon MemoryDB for the sync servers' update journal (Redis Streams), instead of ElastiCache.
 * MemoryDB answers a write only once its multi-AZ transaction log holds it, so a lost
 * node loses no journaled update, where ElastiCache's asynchronous replica may lack the last ones.
 * Private, TLS only, and an ACL user of its own whose password is kept in Secrets Manager.
 */
export class JournalStore extends Construct {
  public readonly securityGroup: ec2.SecurityGroup
  public readonly cluster: memorydb.CfnCluster
  /** `JOURNAL` for the sync servers (a cluster endpoint: `JOURNAL_CLUSTER=1`); the password goes as `JOURNAL_PASSWORD`. */
  public readonly url: string
  public readonly password: secretsmanager.Secret

  constructor(scope: Construct, id: string, props: JournalStoreProps) {
    super(scope, id)
    // Cluster, ACL, user and subnet group names are unique per account and region, like stack names.
    const name = memoryDbName(props.name, 'journal')
    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: 'Symphony journal (MemoryDB): reachable only from the sync servers',
      allowAllOutbound: false,
    })
    this.password = generatedSecret(this, 'Password', 'Symphony JOURNAL_PASSWORD (the MemoryDB user)', 64)
    const user = new memorydb.CfnUser(this, 'User', {
      userName: name,
      accessString: ACCESS_STRING,
      authenticationMode: {
        Type: 'password',
        Passwords: [this.password.secretValue.unsafeUnwrap()], // a dynamic reference, resolved by CloudFormation
      },
    })
    const acl = new memorydb.CfnACL(this, 'Acl', { aclName: name, userNames: [name] })
    acl.addResourceDependency(user)
    const subnetGroup = new memorydb.CfnSubnetGroup(this, 'Subnets', {
      subnetGroupName: name,
      description: 'Symphony journal: isolated subnets',
      subnetIds: props.subnets.subnetIds,
    })
    this.cluster = new memorydb.CfnCluster(this, 'Cluster', {
      clusterName: name,
      description: 'Symphony update journal (Redis Streams)',
      engine: 'redis',
      engineVersion: '7.1',
      nodeType: props.nodeType,
      numShards: props.shards,
      numReplicasPerShard: props.replicas,
      aclName: name,
      tlsEnabled: true,
      port: PORT,
      subnetGroupName: name,
      securityGroupIds: [this.securityGroup.securityGroupId],
      autoMinorVersionUpgrade: true,
    })
    this.cluster.addResourceDependency(acl)
    this.cluster.addResourceDependency(subnetGroup)
    // The port the cluster was given, not its ClusterEndpoint.Port: that attribute is a number, which
    // Fn::Join does not take (cfn-lint E1022).
    const endpoint = `${this.cluster.attrClusterEndpointAddress}:${PORT}`
    this.url = `rediss://${name}@${endpoint}`
  }

  /** Lets `peer` open connections to the cluster's nodes. */
  allowFrom(peer: ec2.ISecurityGroup): void {
    this.securityGroup.addIngressRule(peer, ec2.Port.tcp(PORT), 'journal (MemoryDB) from the sync servers')
  }
}

/**
 * `<stack>-<suffix>` in what MemoryDB allows (at most 40 lowercase letters, digits and single
 * hyphens, starting with a letter); a stack name that had to be changed to fit gets a hash of
 * itself, so two stacks never share a name.
 */
export function memoryDbName(stackName: string, suffix: string): string {
  const room = 40 - suffix.length - 1
  const base = stackName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/-+$/, '')
  if (base === stackName && base.length <= room) return `${base}-${suffix}`
  const hash = createHash('sha256').update(stackName).digest('hex').slice(0, 6)
  const kept = base.slice(0, room - hash.length - 1).replace(/-+$/, '')
  return `${kept}-${hash}-${suffix}`
}

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Template } from 'aws-cdk-lib/assertions'
import { parseConfig } from '../../server/src/config.js'
import { memoryDbName } from '../lib/journal-store.js'
import { DEFAULT_SUBNETS } from '../lib/network.js'
import type { SymphonyStack } from '../lib/symphony-stack.js'
import { removeSynthesized, synthesize } from './helpers/synthesize.js'
import {
  type ContainerDefinition,
  containerNamed,
  resourcesOf,
  sampleEnvironment,
} from './helpers/template-values.js'

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped; the tests read it freely
type Properties = Record<string, any>
const only = (template: Template, type: string) => {
  const found = resourcesOf(template, type)
  assert.equal(found.length, 1, `one ${type}`)
  return found[0] as [string, Properties]
}
const environmentOf = (server: ContainerDefinition) =>
  Object.fromEntries((server.Environment ?? []).map(({ Name, Value }) => [Name, Value]))
const secretsOf = (server: ContainerDefinition) =>
  Object.fromEntries((server.Secrets ?? []).map(({ Name, ValueFrom }) => [Name, ValueFrom]))
/** What makes up the ElastiCache Redis: its group, subnet group, AUTH token and security group. */
const elastiCacheParts = (template: Template) => [
  ...resourcesOf(template, 'AWS::ElastiCache::ReplicationGroup'),
  ...resourcesOf(template, 'AWS::ElastiCache::SubnetGroup'),
  ...resourcesOf(template, 'AWS::SecretsManager::Secret').filter(([id]) => id.startsWith('CacheAuthToken')),
  ...resourcesOf(template, 'AWS::EC2::SecurityGroup').filter(([id]) => id.startsWith('CacheSecurityGroup')),
]

describe('journalStore: the update journal on ElastiCache (default) or MemoryDB', () => {
  after(removeSynthesized)

  it('by default there is no MemoryDB: the journal is in the ElastiCache Redis, handed over as PUBSUB', () => {
    const { template, stack } = synthesize()
    for (const type of ['Cluster', 'ACL', 'User', 'SubnetGroup']) {
      template.resourceCountIs(`AWS::MemoryDB::${type}`, 0)
    }
    const [groupId] = only(template, 'AWS::ElastiCache::ReplicationGroup')
    assert.match(groupId, /^CacheRedis/)
    assert.equal(elastiCacheParts(template).length, 4, 'group, subnet group, AUTH token, security group')
    const server = containerNamed(template, 'server')
    const environment = environmentOf(server)
    assert.equal(environment.JOURNAL, undefined)
    assert.equal(environment.JOURNAL_CLUSTER, undefined)
    assert.deepEqual(environment.PUBSUB, {
      'Fn::Join': [
        '',
        [
          'rediss://',
          { 'Fn::GetAtt': [groupId, 'PrimaryEndPoint.Address'] },
          ':',
          { 'Fn::GetAtt': [groupId, 'PrimaryEndPoint.Port'] },
        ],
      ],
    })
    const secrets = secretsOf(server)
    assert.deepEqual(secrets.PUBSUB_PASSWORD, stack.resolve(stack.symphony.cache?.authToken.secretArn))
    assert.equal(secrets.JOURNAL_PASSWORD, undefined)

    // The server's own parser: a shared registry, and the journal in the cluster's Redis with its token.
    const { journal, registry } = parseConfig(sampleEnvironment(server)).backends
    assert.equal(registry.kind, 'dynamodb')
    assert.equal(journal.kind, 'redis')
    assert.equal(journal.kind === 'redis' && journal.cluster, false)
    assert.match(
      journal.kind === 'redis' ? journal.url : '',
      /^rediss:\/\/:secret-x+@sample\.internal\.example:6380\/?$/,
    )
  })

  describe('journalStore=memorydb', () => {
    let template: Template
    let stack: SymphonyStack
    before(() => {
      // cdk-nag runs in synthesize: a finding without its acknowledgement fails here.
      ;({ template, stack } = synthesize({ journalStore: 'memorydb' }))
    })

    it('a MemoryDB cluster with TLS, one shard and a replica in it, its own ACL user, never open access', () => {
      const [, cluster] = only(template, 'AWS::MemoryDB::Cluster')
      assert.equal(cluster.TLSEnabled, true)
      assert.equal(cluster.NumShards, 1)
      assert.ok(cluster.NumReplicasPerShard >= 1, 'a replica: a lost primary fails over, multi-AZ')
      assert.equal(cluster.NodeType, 'db.t4g.small')
      assert.equal(cluster.Port, 6379)
      const [, acl] = only(template, 'AWS::MemoryDB::ACL')
      const [userId, user] = only(template, 'AWS::MemoryDB::User')
      assert.notEqual(cluster.ACLName, 'open-access')
      assert.equal(cluster.ACLName, acl.ACLName)
      assert.deepEqual(acl.UserNames, [user.UserName])
      assert.equal(user.AuthenticationMode.Type, 'password')
      assert.match(
        JSON.stringify(user.AuthenticationMode.Passwords),
        /resolve:secretsmanager/,
        'never plain text',
      )
      assert.match(user.AccessString, /^on ~symphony:\* /, 'only the journal’s keys')
      // Created in order: the user before the ACL naming it, both before the cluster.
      template.hasResource('AWS::MemoryDB::ACL', { DependsOn: [userId] })
    })

    it('sits in the isolated data subnets, reachable only from the sync tasks on 6379', () => {
      const [, subnetGroup] = only(template, 'AWS::MemoryDB::SubnetGroup')
      const [, cluster] = only(template, 'AWS::MemoryDB::Cluster')
      assert.equal(cluster.SubnetGroupName, subnetGroup.SubnetGroupName)
      const dataSubnets = stack.resolve(stack.symphony.vpc.selectSubnets(DEFAULT_SUBNETS.data).subnetIds)
      assert.deepEqual(subnetGroup.SubnetIds, dataSubnets)
      assert.equal(dataSubnets.length, 2, 'one per zone: the replica lives in the other')
      // No route out of the VPC from them at all.
      const routeTableOf = new Map(
        resourcesOf(template, 'AWS::EC2::SubnetRouteTableAssociation').map(([, a]) => [
          (a as Properties).SubnetId.Ref,
          (a as Properties).RouteTableId.Ref,
        ]),
      )
      const routed = new Set(
        resourcesOf(template, 'AWS::EC2::Route').map(([, r]) => (r as Properties).RouteTableId.Ref),
      )
      for (const subnet of dataSubnets as Properties[])
        assert.ok(!routed.has(routeTableOf.get(subnet.Ref)), subnet.Ref)

      const groupIds = (cluster.SecurityGroupIds as Properties[]).map((g) => g['Fn::GetAtt'][0])
      assert.equal(groupIds.length, 1)
      const [journalSg] = groupIds
      const groups = Object.fromEntries(resourcesOf(template, 'AWS::EC2::SecurityGroup'))
      assert.equal((groups[journalSg] as Properties).SecurityGroupIngress, undefined, 'no address range')
      const syncSg = stack.resolve(stack.symphony.sync.securityGroup.securityGroupId)['Fn::GetAtt'][0]
      const ingress = resourcesOf(template, 'AWS::EC2::SecurityGroupIngress')
        .map(([, rule]) => rule as Properties)
        .filter((rule) => rule.GroupId?.['Fn::GetAtt']?.[0] === journalSg)
      assert.deepEqual(
        ingress.map((rule) => [
          rule.SourceSecurityGroupId['Fn::GetAtt'][0],
          rule.IpProtocol,
          rule.FromPort,
          rule.ToPort,
        ]),
        [[syncSg, 'tcp', 6379, 6379]],
      )
    })

    it('makes no ElastiCache: the journal is all the servers kept in Redis', () => {
      assert.deepEqual(elastiCacheParts(template), [])
      assert.equal(stack.symphony.cache, undefined)
      const ingress = resourcesOf(template, 'AWS::EC2::SecurityGroupIngress')
      assert.deepEqual(
        ingress.filter(([, rule]) => (rule as Properties).FromPort === 6380),
        [],
        'nothing opens the ElastiCache port',
      )
    })

    it('hands the sync tasks JOURNAL=rediss://… at the cluster endpoint, its password as a secret, and no PUBSUB', () => {
      const server = containerNamed(template, 'server')
      const environment = environmentOf(server)
      const [clusterId] = only(template, 'AWS::MemoryDB::Cluster')
      const [, user] = only(template, 'AWS::MemoryDB::User')
      assert.deepEqual(environment.JOURNAL, {
        'Fn::Join': [
          '',
          [
            `rediss://${user.UserName}@`,
            { 'Fn::GetAtt': [clusterId, 'ClusterEndpoint.Address'] },
            // The cluster's own port as text: ClusterEndpoint.Port is a number, which Fn::Join refuses.
            ':6379',
          ],
        ],
      })
      assert.equal(environment.JOURNAL_CLUSTER, '1')
      assert.equal(environment.PUBSUB, undefined)
      const journalSecret = stack.resolve(stack.symphony.journal?.password.secretArn)
      const secrets = secretsOf(server)
      assert.deepEqual(secrets.JOURNAL_PASSWORD, journalSecret)
      assert.equal(secrets.PUBSUB_PASSWORD, undefined)

      // What the server's own parser makes of it: a shared registry, and the cluster client for the
      // journal, over TLS, as the user.
      const { journal, registry } = parseConfig(sampleEnvironment(server)).backends
      assert.equal(registry.kind, 'dynamodb')
      assert.equal(journal.kind, 'redis')
      assert.equal(journal.kind === 'redis' && journal.cluster, true)
      assert.match(
        journal.kind === 'redis' ? journal.url : '',
        new RegExp(`^rediss://${user.UserName}:secret-x+@sample\\.internal\\.example:6379$`),
      )
    })
  })

  it('journalNodeType and journalReplicas size the cluster', () => {
    const { template } = synthesize({
      journalStore: 'memorydb',
      journalNodeType: 'db.r7g.large',
      journalReplicas: '2',
    })
    template.hasResourceProperties('AWS::MemoryDB::Cluster', {
      NodeType: 'db.r7g.large',
      NumReplicasPerShard: 2,
    })
  })

  it('names its MemoryDB parts after the stack, within MemoryDB’s rules, two stacks never alike', () => {
    const rule = /^[a-z](?!.*--)[a-z0-9-]{0,38}[a-z0-9]$/
    const names = [
      'symphony',
      'Symphony',
      'symphony-2',
      'My--Stack',
      `S${'x'.repeat(127)}`,
      `S${'x'.repeat(126)}y`,
    ].map((stack) => memoryDbName(stack, 'journal'))
    for (const name of names) assert.match(name, rule)
    assert.equal(names[0], 'symphony-journal', 'a name that already fits is kept')
    assert.equal(new Set(names).size, names.length)
  })
})

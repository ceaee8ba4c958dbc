import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Match } from 'aws-cdk-lib/assertions'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import { removeSynthesized, synthesize } from './helpers/synthesize.js'
import { containerNamed, sampleEnvironment } from './helpers/template-values.js'

const CERTIFICATE = 'arn:aws:acm:eu-west-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-123456789abc'

describe('the stack under other settings', () => {
  after(removeSynthesized)

  it('large with a certificate: HTTPS on 443 and 8443, HTTP redirected, wss:// URL on the given name', () => {
    const { template } = synthesize({
      size: 'large',
      certificateArn: CERTIFICATE,
      domainName: 'collab.example.com',
    })
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
      Port: 443,
      Protocol: 'HTTPS',
      Certificates: [{ CertificateArn: CERTIFICATE }],
      SslPolicy: Match.stringLikeRegexp('TLS13'),
    })
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Port: 8443, Protocol: 'HTTPS' })
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
      Port: 80,
      DefaultActions: [
        Match.objectLike({
          Type: 'redirect',
          RedirectConfig: Match.objectLike({ Port: '443', Protocol: 'HTTPS' }),
        }),
      ],
    })
    const outputs = template.findOutputs('*')
    assert.equal(outputs.WebSocketUrl?.Value, 'wss://collab.example.com')
    assert.equal(outputs.DashboardUrl?.Value, 'https://collab.example.com:8443')
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 6,
      MaxCapacity: 40,
    })
    template.hasResourceProperties('AWS::ElastiCache::ReplicationGroup', {
      CacheNodeType: 'cache.m7g.large',
      NumCacheClusters: 2,
      AutomaticFailoverEnabled: true,
      MultiAZEnabled: true,
    })
    template.hasResourceProperties('AWS::RDS::DBInstance', { DBInstanceClass: 'db.m7g.large', MultiAZ: true })
    template.resourceCountIs('AWS::EC2::NatGateway', 2)
  })

  it('a throwaway stack with JWKS auth and its own task counts: everything deletable, no generated key', () => {
    const { template } = synthesize({
      size: 'medium',
      retainData: 'false',
      authJwksUrl: 'https://auth.example.com/.well-known/jwks.json',
      minTasks: '3',
      maxTasks: '5',
      dashboardAllowedCidr: '203.0.113.0/24',
      allowedOrigins: 'https://app.example.com,https://admin.example.com',
    })
    template.hasResource('AWS::RDS::DBInstance', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ DeletionProtection: false, MultiAZ: true }),
    })
    template.hasResource('AWS::S3::Bucket', { DeletionPolicy: 'Delete' })
    template.resourceCountIs('Custom::S3AutoDeleteObjects', 2)
    const environment = sampleEnvironment(containerNamed(template, 'server'))
    assert.equal(environment.AUTH_JWKS_URL, 'https://auth.example.com/.well-known/jwks.json')
    assert.equal(environment.AUTH_SECRET, undefined)
    assert.equal(environment.ALLOWED_ORIGINS, 'https://app.example.com,https://admin.example.com')
    assert.equal(template.findOutputs('AuthSecret').AuthSecret, undefined)
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 3,
      MaxCapacity: 5,
    })
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: Match.stringLikeRegexp('load balancer'),
      SecurityGroupIngress: Match.arrayWith([Match.objectLike({ CidrIp: '203.0.113.0/24', FromPort: 8080 })]),
    })
  })

  it('cdk-nag runs on the app: one unacknowledged finding fails synthesis', () => {
    assert.throws(
      () =>
        synthesize({}, (stack) => {
          const group = new ec2.SecurityGroup(stack, 'Planted', { vpc: stack.network.vpc })
          group.addIngressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(22))
        }),
      /Validation failed/,
    )
  })

  it('the load-agent fleet runs the harness image, dials out to the coordinator, lets nothing in, and passes cdk-nag', () => {
    const { template, assembly } = synthesize({ loadAgents: '4', loadCoordinatorUrl: 'ws://10.0.3.7:8700' })
    template.hasResourceProperties('AWS::ECS::Service', {
      DesiredCount: 4,
      NetworkConfiguration: { AwsvpcConfiguration: Match.objectLike({ AssignPublicIp: 'DISABLED' }) },
    })
    const agent = containerNamed(template, 'agent')
    assert.deepEqual(agent.Command, ['agent', '--coordinator', 'ws://10.0.3.7:8700'])
    assert.deepEqual(agent.Ulimits, [{ Name: 'nofile', SoftLimit: 65535, HardLimit: 65535 }])
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: 'Symphony load agents: outbound only',
      SecurityGroupIngress: Match.absent(),
    })
    // cdk deploy builds the agents' image from the load-agent target of the one Dockerfile.
    const manifest = JSON.parse(readFileSync(join(assembly.directory, 'Symphony.assets.json'), 'utf8')) as {
      dockerImages: Record<string, { source: { dockerFile?: string; dockerBuildTarget?: string } }>
    }
    const images = Object.values(manifest.dockerImages).map(
      (image) => `${image.source.dockerFile}#${image.source.dockerBuildTarget}`,
    )
    assert.ok(images.includes('infra/Dockerfile#load-agent'), `image assets: ${images.join(', ')}`)
  })
})

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, describe, it } from 'node:test'
import { Match, type Template } from 'aws-cdk-lib/assertions'
import { removeSynthesized, synthesize } from './helpers/synthesize.js'
import { resourcesOf, sampleValue } from './helpers/template-values.js'

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped; the tests read it freely
type Properties = Record<string, any>
const CERTIFICATE = 'arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-123456789abc'

const loadBalancerGroup = (template: Template) =>
  resourcesOf(template, 'AWS::EC2::SecurityGroup')
    .map(([, p]) => p as Properties)
    .find((p) => /load balancer/.test(p.GroupDescription))
const ingressOn = (template: Template, port: number) =>
  [
    ...(loadBalancerGroup(template)?.SecurityGroupIngress ?? []),
    ...resourcesOf(template, 'AWS::EC2::SecurityGroupIngress').map(([, p]) => p),
  ].filter((rule: Properties) => rule.FromPort === port || rule.ToPort === port)
const tasks = (template: Template) =>
  resourcesOf(template, 'AWS::ECS::TaskDefinition').map(([id, p]) => [id, p as Properties] as const)

/** What a secret looks like in clear: a password in a URL, a key's PEM, a long random token, a secret-ish name. */
function looksSecret(name: string, value: string): string | undefined {
  if (/:\/\/[^/\s:@]+:[^/\s@]+@/.test(value)) return 'a URL with a password'
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(value)) return 'a private key'
  if (/^(?:whsec_|sk_|AKIA)[A-Za-z0-9]/.test(value)) return 'a key by its prefix'
  if (/(?:SECRET|PASSWORD|TOKEN|PRIVATE_KEY|API_KEY)$/.test(name)) return 'a secret by its name'
  if (/^[A-Za-z0-9+/=_-]{32,}$/.test(value) && /\d/.test(value) && /[A-Z]/.test(value))
    return 'a random token'
  return undefined
}

describe('exposure: what the internet can reach, and what task definitions hold', () => {
  after(removeSynthesized)

  it('by default the dashboard’s listener lets nobody in; ECS Exec on its service allows SSM port forwarding', () => {
    const { template } = synthesize()
    assert.deepEqual(ingressOn(template, 8080), [], 'no rule for the dashboard port')
    assert.ok(ingressOn(template, 80).length > 0, 'the WebSocket listener stays open')
    template.hasResourceProperties('AWS::ECS::Service', {
      EnableExecuteCommand: true,
      LoadBalancers: [Match.objectLike({ ContainerName: 'dashboard', ContainerPort: 3000 })],
    })
    const services = resourcesOf(template, 'AWS::ECS::Service').map(([, p]) => p as Properties)
    assert.equal(services.filter((s) => s.EnableExecuteCommand).length, 1, 'only the dashboard')
    // The SSM agent gets writable folders; the dashboard's root stays read-only.
    const dashboard = tasks(template)
      .flatMap(([, t]) => t.ContainerDefinitions as Properties[])
      .find((c) => c.Name === 'dashboard')
    assert.equal(dashboard?.ReadonlyRootFilesystem, true)
    assert.deepEqual(dashboard?.MountPoints.map((m: Properties) => m.ContainerPath).sort(), [
      '/var/lib/amazon',
      '/var/log/amazon',
    ])
    for (const output of ['ClusterName', 'DashboardServiceName'])
      assert.ok(template.findOutputs(output)[output])
  })

  it('dashboardAllowedCidr opens the dashboard’s port to that range only; a certificate makes it HTTPS', () => {
    const { template } = synthesize({ dashboardAllowedCidr: '198.51.100.0/24', certificateArn: CERTIFICATE })
    const rules = ingressOn(template, 8443)
    assert.equal(rules.length, 1)
    assert.equal(rules[0].CidrIp, '198.51.100.0/24')
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
      Port: 8443,
      Protocol: 'HTTPS',
      Certificates: [{ CertificateArn: CERTIFICATE }],
    })
    assert.deepEqual(ingressOn(template, 8080), [])
  })

  it('no container’s environment holds anything that looks like a secret, in any configuration', () => {
    for (const context of [
      {},
      {
        authJwksUrl: 'https://auth.example.com/jwks.json',
        loadAgents: 'true',
        journalStore: 'memorydb',
        webhookUrl: 'https://app.example.com/symphony-events',
      },
    ]) {
      const { template } = synthesize(context)
      for (const [id, task] of tasks(template)) {
        for (const container of task.ContainerDefinitions as Properties[]) {
          for (const { Name, Value } of container.Environment ?? []) {
            const value = Name === 'AOT_CONFIG_CONTENT' ? '' : sampleValue(Value)
            assert.equal(looksSecret(Name, value), undefined, `${id} ${container.Name} ${Name}=${value}`)
          }
          for (const secret of container.Secrets ?? []) {
            assert.match(
              JSON.stringify(secret.ValueFrom),
              /Ref|secretsmanager|ssm/,
              `${secret.Name} by reference`,
            )
          }
        }
      }
    }
    // The check itself catches what it should.
    assert.ok(looksSecret('DATABASE_URL', 'postgres://symphony:hunter2@db:5432/symphony'))
    assert.ok(looksSecret('INTERNAL_TOKEN', 'x'))
    assert.ok(looksSecret('X', 'Zq8fK2mN4pR7sT9vW1xY3zA5bC6dE0gH'))
    assert.equal(
      looksSecret('DATABASE_URL', 'postgres://symphony@db:5432/symphony?sslmode=verify-full'),
      undefined,
    )
  })

  it('cpuArchitecture=arm64 runs every task on ARM64 and builds every image for linux/arm64', () => {
    const { template, assembly } = synthesize({
      cpuArchitecture: 'arm64',
      loadAgents: 'true',
    })
    const all = tasks(template)
    assert.ok(all.length >= 3, 'sync, dashboard and load-agent tasks')
    for (const [id, task] of all) {
      assert.deepEqual(task.RuntimePlatform, { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' }, id)
    }
    const images = Object.values(
      (
        JSON.parse(readFileSync(`${assembly.directory}/Symphony.assets.json`, 'utf8')) as {
          dockerImages: Record<string, { source: Properties }>
        }
      ).dockerImages,
    ).map((image) => image.source)
    assert.equal(images.length, 3)
    for (const image of images) {
      assert.equal(image.dockerFile, 'infra/Dockerfile')
      assert.equal(image.platform, 'linux/arm64')
    }
    assert.deepEqual(images.map((i) => i.dockerBuildTarget).sort(), [
      'dashboard',
      'load-agent',
      'sync-server',
    ])

    const x86 = synthesize().template
    for (const [id, task] of tasks(x86)) assert.equal(task.RuntimePlatform.CpuArchitecture, 'X86_64', id)
  })
})

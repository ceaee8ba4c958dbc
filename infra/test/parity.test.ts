import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { Template } from 'aws-cdk-lib/assertions'
import { webhookKey } from '../../server/src/adapters/webhooks/standard-webhooks.js'
import { parseConfig } from '../../server/src/config.js'
import { parseSettings } from '../lib/settings.js'
import { parseDockerfile } from './helpers/dockerfile-rehearsal.js'
import { removeSynthesized, synthesize } from './helpers/synthesize.js'
import { containerNamed, resourcesOf, sampleEnvironment } from './helpers/template-values.js'

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped; the tests read it freely
type Properties = Record<string, any>

/** The Secrets Manager secret a container's secret `name` is read from, by its description. */
function secretBehind(template: Template, container: string, name: string): Properties | undefined {
  const entry = containerNamed(template, container).Secrets?.find((s) => s.Name === name)
  const ref = (entry?.ValueFrom as Properties | undefined)?.Ref
  assert.ok(container && ref, `${name} comes from a secret by reference`)
  return resourcesOf(template, 'AWS::SecretsManager::Secret').find(([id]) => id === ref)?.[1]
}

describe('parity: what `npm start` offers, `cdk deploy` offers too', () => {
  let template: Template
  before(() => {
    template = synthesize().template
  })
  after(removeSynthesized)

  it('turns the REST API on with a generated API_SECRET, and outputs its name, never its value', () => {
    const server = containerNamed(template, 'server')
    assert.equal(
      server.Environment?.find((e) => e.Name === 'API_SECRET'),
      undefined,
      'never in plain environment',
    )
    const secret = secretBehind(template, 'server', 'API_SECRET')
    assert.ok(secret, 'API_SECRET is an ECS secret from Secrets Manager')
    assert.equal(secret.Name, 'Symphony/api-secret')
    // The server wants 32 characters at least; letters and digits travel in any header.
    assert.ok(secret.GenerateSecretString.PasswordLength >= 32)
    assert.equal(secret.GenerateSecretString.ExcludePunctuation, true)
    assert.equal(parseConfig(sampleEnvironment(server)).apiSecret?.length, 67, 'the server takes it')

    const output = template.findOutputs('ApiSecretName').ApiSecretName
    assert.equal(output?.Value, 'Symphony/api-secret', 'the name, which is no secret')
    const outputs = JSON.stringify(template.findOutputs('*'))
    assert.doesNotMatch(outputs, /SecretString|resolve:secretsmanager/, 'no output holds a secret value')
  })

  it('-c webhookUrl sends room events there, signed with a key generated in Secrets Manager', () => {
    const withWebhook = synthesize({ webhookUrl: 'https://app.example.com/symphony-events' }).template
    const server = containerNamed(withWebhook, 'server')
    const names = (server.Environment ?? []).map((e) => e.Name)
    assert.ok(names.includes('WEBHOOK_URL'))
    assert.ok(!names.includes('WEBHOOK_SECRET') && !names.includes('WEBHOOK_SIGNING_KEY'), 'no key in clear')
    const secret = secretBehind(withWebhook, 'server', 'WEBHOOK_SIGNING_KEY')
    assert.equal(secret?.Name, 'Symphony/webhook-signing-key')
    assert.deepEqual(secret?.GenerateSecretString, { PasswordLength: 44, ExcludePunctuation: true })
    assert.equal(
      withWebhook.findOutputs('WebhookSigningKeyName').WebhookSigningKeyName?.Value,
      'Symphony/webhook-signing-key',
    )

    // The entry point runs the image's own CMD, with WEBHOOK_SECRET made from the key.
    const image = parseDockerfile('infra/Dockerfile').find((stage) => stage.name === 'sync-server')
    const cmd = image?.instructions.filter((i) => i.keyword === 'CMD').at(-1)?.args
    assert.deepEqual(server.Command, JSON.parse(cmd ?? '[]'))
    const [shell = '', ...shellArgs] = server.EntryPoint ?? []
    assert.equal(shell, '/bin/sh', 'bookworm-slim has a POSIX shell')
    // A value as Secrets Manager generates it: 44 letters and digits.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
    const generated = Array.from({ length: 44 }, () => alphabet[randomInt(alphabet.length)]).join('')
    const started = execFileSync(
      shell,
      [...shellArgs, process.execPath, '-e', 'process.stdout.write(process.env.WEBHOOK_SECRET ?? "")'],
      { env: { PATH: process.env.PATH, WEBHOOK_SIGNING_KEY: generated }, encoding: 'utf8' },
    )
    assert.equal(started, `whsec_${generated}`)
    const events = parseConfig({ ...sampleEnvironment(server), WEBHOOK_SECRET: started }).backends.events
    assert.equal(events.kind, 'webhook')
    assert.equal(webhookKey(started).length, 33, 'a 33-byte signing key')

    // Without a URL: no key, no wrapper, the image's entry point as built.
    const plain = containerNamed(template, 'server')
    assert.equal(plain.EntryPoint, undefined)
    assert.equal(plain.Command, undefined)
    assert.equal(template.findOutputs('WebhookSigningKeyName').WebhookSigningKeyName, undefined)
  })

  it('refuses a bad webhookUrl with one line naming the key', () => {
    const settings = (webhookUrl: string) => () =>
      parseSettings((key) => (key === 'webhookUrl' ? webhookUrl : undefined))
    assert.throws(settings('ftp://example.com/hook'), /^Error: context webhookUrl: must be an http/)
    assert.throws(settings('not a url'), /^Error: context webhookUrl: must be an http/)
    assert.equal(settings('https://example.com/hook')().webhookUrl, 'https://example.com/hook')
  })
})

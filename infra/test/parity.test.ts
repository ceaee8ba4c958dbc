import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import type { Template } from 'aws-cdk-lib/assertions'
import { webhookKey } from '../../server/src/adapters/webhooks/standard-webhooks.js'
import { parseConfig } from '../../server/src/config.js'
import { SERVER_SETTINGS_NOT_EXPOSED, TUNABLE_SERVER_SETTINGS } from '../lib/server-settings.js'
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

/** Every variable docs/configuration.md's table lists, with its default cell. */
function documentedSettings(): Map<string, string> {
  const rows = readFileSync('docs/configuration.md', 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| `'))
  const settings = new Map<string, string>()
  for (const row of rows) {
    const [, names = '', fallback = ''] = row.split('|').map((cell) => cell.trim())
    for (const [, name] of names.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) settings.set(name ?? '', fallback)
  }
  return settings
}

/** What the docs say a secret is: never in a task's plain environment. */
const SECRET_NAME = /(?:SECRET|PASSWORD|TOKEN|PRIVATE_KEY)$/

/** The context options that each bring settings of their own, beyond the defaults. */
const EVERY_OPTION = {
  authJwksUrl: 'https://auth.example.com/.well-known/jwks.json',
  allowedOrigins: 'https://app.example.com',
  webhookUrl: 'https://app.example.com/symphony-events',
  journalStore: 'memorydb',
  commit: 'abc1234',
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

  it('every setting docs/configuration.md lists has a way in from CDK, or a reason it has none', () => {
    const documented = documentedSettings()
    assert.ok(documented.size > 50, `the table parsed (${documented.size} settings)`)
    // Every tunable setting at a value the server accepts: its documented default, when a number.
    const tunables = Object.fromEntries(
      Object.keys(TUNABLE_SERVER_SETTINGS).map((name) => {
        const fallback = /^`(\d+|[a-z]+)`$/.exec(documented.get(name) ?? '')?.[1]
        return [name, fallback ?? 'https://issuer.example.com']
      }),
    )
    const reached = new Set<string>()
    for (const context of [{}, { ...EVERY_OPTION, serverSettings: tunables }]) {
      const server = containerNamed(synthesize(context).template, 'server')
      for (const { Name } of server.Environment ?? []) {
        assert.doesNotMatch(Name, SECRET_NAME, `${Name} is a secret, in plain environment`)
        reached.add(Name)
      }
      for (const { Name } of server.Secrets ?? []) reached.add(Name)
      // The entry point makes WEBHOOK_SECRET from its key (see the webhook test above).
      if (server.EntryPoint?.join(' ').includes('export WEBHOOK_SECRET=')) reached.add('WEBHOOK_SECRET')
      // The server itself starts on what the task holds.
      const webhookSecret = server.EntryPoint ? { WEBHOOK_SECRET: `whsec_${'A'.repeat(44)}` } : {}
      parseConfig({ ...sampleEnvironment(server), ...webhookSecret })
    }
    const missing = [...documented.keys()].filter(
      (name) => !reached.has(name) && !(name in SERVER_SETTINGS_NOT_EXPOSED),
    )
    assert.deepEqual(missing, [], 'no way in from CDK, and not in SERVER_SETTINGS_NOT_EXPOSED')
    const both = Object.keys(SERVER_SETTINGS_NOT_EXPOSED).filter((name) => reached.has(name))
    assert.deepEqual(both, [], 'listed as not exposed, yet set')
    const stale = [
      ...Object.keys(SERVER_SETTINGS_NOT_EXPOSED),
      ...Object.keys(TUNABLE_SERVER_SETTINGS),
    ].filter((name) => !documented.has(name))
    assert.deepEqual(stale, [], 'named in infra/lib/server-settings.ts, yet not in the docs')
    const undocumented = [...reached].filter((name) => !documented.has(name))
    assert.deepEqual(
      undocumented.sort(),
      ['NODE_ENV', 'WEBHOOK_SIGNING_KEY'],
      'only these are not server settings',
    )
    const secretTunables = Object.keys(TUNABLE_SERVER_SETTINGS).filter((name) => SECRET_NAME.test(name))
    assert.deepEqual(secretTunables, [], 'a secret never goes through -c serverSettings')
  })

  it('serverSettings takes only the tunable settings, each checked, with one line naming it', () => {
    const settings = (serverSettings: unknown) => () =>
      parseSettings((key) => (key === 'serverSettings' ? serverSettings : undefined))
    assert.deepEqual(settings('API_MAX_LIST_LIMIT=5000, LOG_LEVEL=debug')().serverSettings, {
      API_MAX_LIST_LIMIT: '5000',
      LOG_LEVEL: 'debug',
    })
    assert.deepEqual(settings({ MAX_CONNECTIONS: 5000 })().serverSettings, { MAX_CONNECTIONS: '5000' })
    assert.throws(
      settings('API_SECRET=x'.padEnd(40, 'x')),
      /^Error: context serverSettings: API_SECRET is not/,
    )
    assert.throws(settings('PUBSUB=redis://elsewhere'), /^Error: context serverSettings: PUBSUB is not/)
    assert.throws(
      settings('API_MAX_LIST_LIMIT=lots'),
      /^Error: context serverSettings: API_MAX_LIST_LIMIT must/,
    )
    assert.throws(settings('LOG_LEVEL'), /^Error: context serverSettings: "LOG_LEVEL" must be KEY=value/)
    const { template: tuned } = synthesize({ serverSettings: 'API_MAX_LIST_LIMIT=5000' })
    const config = parseConfig(sampleEnvironment(containerNamed(tuned, 'server')))
    assert.equal(config.apiMaxListLimit, 5000)
  })
})

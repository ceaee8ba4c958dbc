import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Template } from 'aws-cdk-lib/assertions'
import { parseConfig } from '../../server/src/config.js'
import { removeSynthesized, synthesize } from './helpers/synthesize.js'
import { containerNamed, resourcesOf, sampleEnvironment } from './helpers/template-values.js'

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped; the tests read it freely
type Properties = Record<string, any>

/** The Secrets Manager secret a container's secret `name` is read from, by its description. */
function secretBehind(template: Template, container: string, name: string): Properties | undefined {
  const entry = containerNamed(template, 'server').Secrets?.find((s) => s.Name === name)
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
})

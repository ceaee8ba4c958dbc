import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isJsonNull, jsonTextProblem } from '../../../src/protocol/json-text.js'
import { seededRandom } from '../../helpers/seeded-random.js'

const utf8 = (text: string) => new TextEncoder().encode(text)
const DEPTH = 64

/** The reference: what every y-protocols reader does with a presence state. */
function parses(bytes: Uint8Array): boolean {
  try {
    JSON.parse(new TextDecoder().decode(bytes))
    return true
  } catch {
    return false
  }
}

/** Random JSON values, with the characters and number forms that need care. */
function randomValue(random: () => number, depth: number): unknown {
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)] as T
  const kind = depth > 4 ? Math.floor(random() * 4) : Math.floor(random() * 6)
  switch (kind) {
    case 0:
      return pick([0, -0.5, 1e21, 123456789, -7, 3.25e-7, Math.random() * 1000])
    case 1:
      return pick(['', 'plain', 'quote " and \\ slash', 'tab\tnew\nline\u0001', 'ünïcødé ✓ 😀', '\u2028'])
    case 2:
      return pick([true, false, null])
    case 3:
      return `${random()}`
    case 4:
      return Array.from({ length: Math.floor(random() * 4) }, () => randomValue(random, depth + 1))
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(random() * 4) }, (_, i) => [`k${i}`, randomValue(random, depth + 1)]),
      )
  }
}

/** A valid text damaged in one place: a byte changed, removed or added, or the text cut short. */
function damaged(text: Uint8Array, random: () => number): Uint8Array {
  const at = Math.floor(random() * text.length)
  const byte = Math.floor(random() * 128)
  switch (Math.floor(random() * 4)) {
    case 0:
      return text.map((b, i) => (i === at ? byte : b))
    case 1:
      return new Uint8Array([...text.subarray(0, at), ...text.subarray(at + 1)])
    case 2:
      return new Uint8Array([...text.subarray(0, at), byte, ...text.subarray(at)])
    default:
      return text.subarray(0, at)
  }
}

describe('JSON text check', () => {
  it('accepts and refuses exactly what JSON.parse does, on random and damaged texts', () => {
    const { random, replayable } = seededRandom('SYMPHONY_JSON_SEED')
    try {
      for (let i = 0; i < 3_000; i++) {
        const valid = utf8(JSON.stringify(randomValue(random, 0), null, random() < 0.3 ? 1 : undefined))
        assert.equal(jsonTextProblem(valid, DEPTH), null, new TextDecoder().decode(valid))
        const bad = damaged(valid, random)
        assert.equal(jsonTextProblem(bad, DEPTH) === null, parses(bad), new TextDecoder().decode(bad))
      }
    } catch (error) {
      throw replayable(error, 'server/test/unit/protocol/json-text.test.ts')
    }
  })

  it('refuses what JSON forbids and JavaScript allows', () => {
    for (const text of [
      "{'a':1}",
      '[1,]',
      '{"a":1,}',
      '01',
      '1.',
      '.5',
      '+1',
      '"\\x41"',
      '"\\u12G4"',
      'NaN',
      'nul',
      '',
      ' ',
      '1 2',
      '{"a" 1}',
      '"a',
      '[1',
      '\u00a01',
    ]) {
      assert.equal(parses(utf8(text)), false, `${text} is not JSON`)
      assert.equal(jsonTextProblem(utf8(text), DEPTH), 'not a JSON text', text)
    }
  })

  it(`counts nesting like brackets: ${DEPTH} levels pass, ${DEPTH + 1} do not`, () => {
    const nested = (levels: number) => utf8(`${'[{"a":'.repeat(levels / 2)}1${'}]'.repeat(levels / 2)}`)
    assert.equal(jsonTextProblem(nested(DEPTH), DEPTH), null)
    assert.equal(jsonTextProblem(nested(DEPTH + 2), DEPTH), `nested deeper than ${DEPTH} levels`)
    assert.equal(jsonTextProblem(utf8(`${'['.repeat(100_000)}`), DEPTH), `nested deeper than ${DEPTH} levels`)
  })

  it('tells the literal null from every other value', () => {
    assert.equal(isJsonNull(utf8(' null ')), true)
    for (const text of ['"null"', '{}', '0', 'false']) assert.equal(isJsonNull(utf8(text)), false, text)
  })
})

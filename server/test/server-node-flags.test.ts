import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { SERVER_NODE_FLAGS, serverNodeFlags } from '@symphony/dev-scripts/server-node-flags'

/** Allocates with a third of a million objects alive at a time; prints the largest young generation seen (MiB). */
const CHURN = `
const v8 = require('node:v8')
const ring = new Array(300_000)
let largest = 0
for (let i = 0; i < 6_000_000; i++) {
  ring[i % ring.length] = { i, s: 'x' + i, a: [i, i + 1] }
  if (i % 10_000 === 0) {
    const young = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')
    largest = Math.max(largest, young.space_size)
  }
}
console.log(largest / 1048576)
`

function largestYoungGeneration(flags: readonly string[]): number {
  const env = { ...process.env, NODE_OPTIONS: '' }
  return Number(execFileSync(process.execPath, [...flags, '-e', CHURN], { env, encoding: 'utf8' }))
}

describe('the V8 flags `npm start` runs the sync server with', () => {
  it('keep the young generation below the 64 MiB or more V8 alone grows it to under the same allocation', () => {
    const capped = largestYoungGeneration(SERVER_NODE_FLAGS)
    assert.ok(capped < 64, `${capped} MiB with ${SERVER_NODE_FLAGS.join(' ')}`)
    const uncapped = largestYoungGeneration([])
    assert.ok(
      uncapped >= 64 && uncapped > capped,
      `${uncapped} MiB by default: the flag would change nothing`,
    )
  })

  it('are what the sync server image and `npm run cluster` run it with too, as the bench measures', () => {
    const root = new URL('../../', import.meta.url)
    const dockerfile = readFileSync(new URL('infra/Dockerfile', root), 'utf8')
    const serverStage = dockerfile.slice(
      dockerfile.indexOf('AS sync-server'),
      dockerfile.indexOf('AS dashboard'),
    )
    assert.match(serverStage, new RegExp(`^ENV NODE_OPTIONS=${SERVER_NODE_FLAGS.join(' ')}$`, 'm'))
    const cluster = readFileSync(new URL('scripts/cluster.mjs', root), 'utf8')
    assert.match(
      cluster,
      /spawn\(process\.execPath, \[\.\.\.serverNodeFlags\(process\.env\.NODE_OPTIONS\), MAIN\]/,
    )
  })

  it('give way to a NODE_OPTIONS that sizes the young generation itself', () => {
    assert.deepEqual(serverNodeFlags(''), SERVER_NODE_FLAGS)
    assert.deepEqual(serverNodeFlags('--enable-source-maps'), SERVER_NODE_FLAGS)
    assert.deepEqual(serverNodeFlags('--max-semi-space-size=64'), [])
  })
})

import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import {
  SERVER_MALLOC_ENV,
  SERVER_NODE_FLAGS,
  serverEnv,
  serverNodeFlags,
} from '@symphony/dev-scripts/server-node-flags'

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

/**
 * Frees a 16 MiB message, then reads 200 messages of 1 MiB while keeping a small block after each
 * (what a room keeps of a message); prints the RSS (MiB) the process still holds once they are freed.
 */
const MESSAGES = `
const MiB = 2 ** 20
const rss = () => process.memoryUsage().rss / MiB
let big = Buffer.alloc(16 * MiB, 1)
big = null
gc()
const before = rss()
const kept = []
let read = []
for (let i = 0; i < 200; i++) {
  read.push(Buffer.alloc(MiB, 1))
  kept.push(Buffer.alloc(16 * 1024, 1))
}
read = null
gc()
setImmediate(() => {
  gc()
  console.log(kept.length > 0 ? rss() - before : 0)
})
`

function heldAfterMessages(env: Record<string, string>): number {
  const { MALLOC_MMAP_THRESHOLD_: _, ...rest } = process.env
  return Number(
    execFileSync(process.execPath, ['--expose-gc', '-e', MESSAGES], {
      env: { ...rest, ...env },
      encoding: 'utf8',
    }),
  )
}

const repositoryFile = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')

/** The Dockerfile's stage that builds the sync server's image. */
function syncServerStage(): string {
  const dockerfile = repositoryFile('infra/Dockerfile')
  return dockerfile.slice(dockerfile.indexOf('AS sync-server'), dockerfile.indexOf('AS dashboard'))
}

function largestYoungGeneration(flags: readonly string[]): number {
  const env = { ...process.env, NODE_OPTIONS: '' }
  return Number(execFileSync(process.execPath, [...flags, '-e', CHURN], { env, encoding: 'utf8' }))
}

describe('the V8 flags and malloc setting `npm start` runs the sync server with', () => {
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
    assert.match(syncServerStage(), new RegExp(`^ENV NODE_OPTIONS=${SERVER_NODE_FLAGS.join(' ')}$`, 'm'))
    const cluster = repositoryFile('scripts/cluster.mjs')
    assert.match(
      cluster,
      /spawn\(process\.execPath, \[\.\.\.serverNodeFlags\(process\.env\.NODE_OPTIONS\), MAIN\]/,
    )
  })

  it("keep the megabytes of freed messages from staying in the server's memory, as glibc alone does after one big message", () => {
    const byDefault = heldAfterMessages({})
    const withSetting = heldAfterMessages(SERVER_MALLOC_ENV)
    assert.ok(byDefault >= 100, `${byDefault} MiB held by default: the setting would change nothing`)
    assert.ok(withSetting < byDefault / 4, `${withSetting} MiB held with it, ${byDefault} without`)
  })

  it("come with the malloc setting wherever the server runs, giving way to the environment's own", () => {
    for (const [name, value] of Object.entries(SERVER_MALLOC_ENV))
      assert.match(syncServerStage(), new RegExp(`^ENV ${name}=${value}$`, 'm'))
    assert.match(repositoryFile('scripts/cluster.mjs'), /env: serverEnv\(\{/)
    assert.match(repositoryFile('scripts/start.mjs'), /'sync',\s+serverEnv\(env\),/)
    assert.deepEqual(serverEnv({ PORT: '1' }), { ...SERVER_MALLOC_ENV, PORT: '1' })
    assert.equal(serverEnv({ MALLOC_MMAP_THRESHOLD_: '65536' }).MALLOC_MMAP_THRESHOLD_, '65536')
  })

  it('give way to a NODE_OPTIONS that sizes the young generation itself', () => {
    assert.deepEqual(serverNodeFlags(''), SERVER_NODE_FLAGS)
    assert.deepEqual(serverNodeFlags('--enable-source-maps'), SERVER_NODE_FLAGS)
    assert.deepEqual(serverNodeFlags('--max-semi-space-size=64'), [])
  })
})

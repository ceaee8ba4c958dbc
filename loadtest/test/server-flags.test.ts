import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { SERVER_NODE_FLAGS } from '@symphony/dev-scripts/server-node-flags'
import { startSymphony } from '../src/bench/servers.js'

/** The process's command line, from /proc (Linux, where the bench runs). */
function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
}

describe('the bench runs our server as `npm start` does', { skip: !existsSync('/proc/self/cmdline') }, () => {
  test('with the V8 flags npm start gives it, unless NODE_OPTIONS sizes the young generation itself', async () => {
    const server = await startSymphony({ env: { DATABASE_URL: 'none' } })
    try {
      for (const flag of SERVER_NODE_FLAGS) assert.ok(commandLine(server.pid).includes(flag), flag)
    } finally {
      await server.stop()
    }
    const tuned = await startSymphony({
      env: { DATABASE_URL: 'none', NODE_OPTIONS: '--max-semi-space-size=4' },
    })
    try {
      for (const flag of SERVER_NODE_FLAGS) assert.ok(!commandLine(tuned.pid).includes(flag), flag)
    } finally {
      await tuned.stop()
    }
  })
})

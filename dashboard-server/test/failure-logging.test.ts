import assert from 'node:assert/strict'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { describe, it, mock } from 'node:test'
import { pino } from 'pino'
import { MemorySnapshotStore } from '../../server/src/adapters/memory-snapshot-store.js'
import { createDashboardApp } from '../src/app.js'
import { LiveEvents } from '../src/live-events.js'
import { MetadataQueries } from '../src/queries.js'

describe('a dashboard request that fails', () => {
  it('is logged through the dashboard logger with its cause, never on the console, and answered 500', async () => {
    const lines: string[] = []
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk))
          done()
        },
      }),
    )
    const queries = new MetadataQueries({
      query: async () => {
        throw new Error('disk on fire')
      },
    } as never)
    const app = createDashboardApp({
      queries,
      events: new LiveEvents('postgres://unused', queries, logger),
      token: null,
      sessionTtlMs: 60_000,
      internalToken: null,
      snapshots: new MemorySnapshotStore(),
      logger,
    })
    const consoleError = mock.method(console, 'error', () => {})
    const server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening))
    })
    try {
      const port = (server.address() as AddressInfo).port
      const response = await fetch(`http://127.0.0.1:${port}/api/servers`)
      assert.equal(response.status, 500)
      const body = (await response.json()) as { error: { code: string; message: string } }
      assert.equal(body.error.code, 'INTERNAL')
      assert.doesNotMatch(body.error.message, /disk on fire/, 'the cause stays in the log')
      const logged = lines.map(
        (line) => JSON.parse(line) as { level: number; msg: string; err?: { message: string } },
      )
      const failure = logged.find((entry) => entry.msg === 'request failed')
      assert.equal(failure?.level, 50, 'logged at error level')
      assert.equal(failure?.err?.message, 'disk on fire')
      assert.equal(consoleError.mock.callCount(), 0)
    } finally {
      consoleError.mock.restore()
      server.closeAllConnections()
      server.close()
    }
  })
})

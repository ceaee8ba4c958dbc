import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import type { RedisLinkSettings } from '../src/adapters/redis-connection.js'
import { RedisUpdateJournal } from '../src/adapters/redis-update-journal.js'
import { DependencyHealth } from '../src/dependency-health.js'
import type { Dependency } from '../src/ports/dependency-outcomes.js'
import { eventually, uniqueRoom } from './helpers/clients.js'
import { type LogEntry, recordingLogger } from './helpers/recording-logger.js'
import { requireTestServices, uniqueName } from './helpers/services.js'
import { TcpLink } from './helpers/tcp-link.js'

// The Redis adapters' links through a proxy the tests control (hung, reset, cut), against the
// real Redis `npm test` starts. Short deadlines, so each fault is seen within a second or two.
const LINK: RedisLinkSettings = {
  commandTimeoutMs: 1_000,
  connectTimeoutMs: 1_000,
  keepAliveMs: 1_000,
  retryMaxDelayMs: 200,
  heartbeatIntervalMs: 200,
  heartbeatTimeoutMs: 500,
}
const until = (check: () => boolean | Promise<boolean>, message: string) => eventually(check, message, 20_000)

const redisPort = () => Number(new URL(requireTestServices().redisUrl).port)
const links: TcpLink[] = []
async function openLink(): Promise<{ link: TcpLink; url: string }> {
  const link = await TcpLink.open(redisPort())
  links.push(link)
  return { link, url: `redis://127.0.0.1:${link.port}` }
}

/** What a server's `/healthz` would say, and every failure reported, in order. */
function recordingHealth() {
  const health = new DependencyHealth()
  /** `<dependency> <action>: <code>` of each failure reported. */
  const failures: string[] = []
  return {
    outcomes: {
      failed(dependency: Dependency, action: string, error: unknown) {
        health.failed(dependency, action, error)
        failures.push(`${dependency} ${health.report()[dependency].error}`)
      },
      succeeded: (dependency: Dependency) => health.succeeded(dependency),
    },
    ok: (dependency: Dependency) => health.report()[dependency].ok,
    error: (dependency: Dependency) => health.report()[dependency].error,
    failures,
  }
}

/** Settles with the promise's outcome, or rejects after `ms`, so a hung command fails the test. */
function settledWithin<T>(promise: Promise<T>, ms: number): Promise<PromiseSettledResult<T>> {
  return Promise.race([
    promise.then(
      (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
      (reason: unknown): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
    ),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms),
    ),
  ])
}

const missed = (logs: LogEntry[], role: string) =>
  logs.some(
    (e) =>
      e.message === 'redis link missed its heartbeat; reopening its connection' && e.fields.role === role,
  )

after(() => {
  for (const link of links) link.close()
})

describe('the journal link', () => {
  it('hung: an append fails within the command timeout, the journal shows down, and both recover once the link does', async () => {
    const { link, url } = await openLink()
    const health = recordingHealth()
    const logs: LogEntry[] = []
    const keyPrefix = `${uniqueName('links')}:`
    const journal = new RedisUpdateJournal(uniqueName('writer'), url, {
      keyPrefix,
      logger: recordingLogger(logs),
      outcomes: health.outcomes,
      link: LINK,
    })
    const room = uniqueRoom('hung-journal')
    try {
      await journal.append(room, new Uint8Array([1]))
      link.blackhole()
      // Ten command timeouts: without a deadline it would hang for good (TCP never gives up on it).
      // It fails by its own timeout or as the heartbeat replaces the connection, whichever is first.
      const hung = await settledWithin(journal.append(room, new Uint8Array([2])), 10 * LINK.commandTimeoutMs)
      assert.equal(hung.status, 'rejected', 'the append fails instead of hanging')
      await until(() => !health.ok('journal'), 'the journal shows down')
      assert.equal(health.error('journal'), 'heartbeat: HEARTBEAT_MISSED')
      assert.ok(missed(logs, 'journal'), 'the missed heartbeat is logged')

      link.restore()
      await until(() => health.ok('journal'), 'the journal shows up again')
      await journal.append(room, new Uint8Array([3]))
      const { updates } = await journal.read(room)
      assert.deepEqual(updates.at(0), new Uint8Array([1]))
      assert.deepEqual(updates.at(-1), new Uint8Array([3]))
    } finally {
      await journal.close()
      await journal.delete(room).catch(() => {})
    }
  })

  it('slower than the command timeout: the command fails, and the connection still serves the next', async () => {
    const { link, url } = await openLink()
    // No heartbeat during the test: what fails the append can only be its own deadline.
    const journal = new RedisUpdateJournal(uniqueName('writer'), url, {
      keyPrefix: `${uniqueName('links')}:`,
      logger: recordingLogger(),
      link: { ...LINK, heartbeatIntervalMs: 600_000 },
    })
    const room = uniqueRoom('slow-journal')
    try {
      await journal.append(room, new Uint8Array([1]))
      link.slow(1.5 * LINK.commandTimeoutMs)
      await assert.rejects(journal.append(room, new Uint8Array([2])), /Command timed out/)
      link.slow(0)
      // The late reply is matched to the command that gave up on it, not to this one.
      const position = await journal.append(room, new Uint8Array([3]))
      const { updates, position: last } = await journal.read(room)
      assert.deepEqual([...position], [...last], 'the append answered with its own entry')
      assert.deepEqual(updates.at(-1), new Uint8Array([3]))
    } finally {
      await journal.close()
      await journal.delete(room).catch(() => {})
    }
  })

  it('a connection that never completes its handshake fails after the connect timeout', async () => {
    const { link } = await openLink()
    link.blackhole()
    const health = recordingHealth()
    // TLS over a silent link: the TCP connection opens, the handshake never ends.
    const journal = new RedisUpdateJournal(uniqueName('writer'), `rediss://127.0.0.1:${link.port}`, {
      logger: recordingLogger(),
      outcomes: health.outcomes,
      link: { ...LINK, connectTimeoutMs: 300 },
    })
    try {
      // Well before ioredis's own default (10 s) would.
      await eventually(
        () => health.failures.includes('journal connection: ETIMEDOUT'),
        'the connect timeout fires',
        5_000,
      )
    } finally {
      await journal.close()
    }
  })

  it('accepted then reset, again and again, then healed: the journal appends again', async () => {
    const { link, url } = await openLink()
    const health = recordingHealth()
    const journal = new RedisUpdateJournal(uniqueName('writer'), url, {
      keyPrefix: `${uniqueName('links')}:`,
      logger: recordingLogger(),
      outcomes: health.outcomes,
      link: LINK,
    })
    const room = uniqueRoom('reset-journal')
    try {
      await journal.append(room, new Uint8Array([1]))
      link.cut()
      link.resetAfterAccept()
      const accepted = link.accepted
      await until(
        () => link.accepted >= accepted + 20,
        'the journal keeps reconnecting (a stuck client stops)',
      )
      assert.equal(health.ok('journal'), false)
      link.restore()
      await until(() => health.ok('journal'), 'the journal shows up again')
      await journal.append(room, new Uint8Array([2]))
      const { updates } = await journal.read(room)
      assert.deepEqual(updates.at(-1), new Uint8Array([2]))
    } finally {
      await journal.close()
      await journal.delete(room).catch(() => {})
    }
  })
})

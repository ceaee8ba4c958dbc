import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import type { RedisLinkSettings } from '../src/adapters/redis-connection.js'
import { RedisPubSub } from '../src/adapters/redis-pubsub.js'
import { RedisUpdateJournal } from '../src/adapters/redis-update-journal.js'
import { DependencyHealth } from '../src/dependency-health.js'
import type { Dependency } from '../src/ports/dependency-outcomes.js'
import { isRoomDeletedFrame, ROOM_DELETED_FRAME } from '../src/protocol/codec.js'
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

/** Publishes from `from` until `received` has a message, as messages sent before a resubscription are lost. */
async function untilDelivered(from: RedisPubSub, room: string, received: number[][], message: string) {
  const timer = setInterval(() => from.publish(room, new Uint8Array([7])), 50)
  try {
    await until(() => received.length > 0, message)
  } finally {
    clearInterval(timer)
  }
  assert.deepEqual(received.at(-1), [7])
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
})

describe('the pub/sub links', () => {
  /** `a` straight to Redis, `b` through the link; `b` holds a room. */
  async function twoServers(url: string, bOptions: { deletionRetryMs?: number } = {}) {
    const channelPrefix = `${uniqueName('links')}:`
    const health = recordingHealth()
    const logs: LogEntry[] = []
    const a = new RedisPubSub(uniqueName('a'), requireTestServices().redisUrl, {
      channelPrefix,
      logger: recordingLogger(),
      link: LINK,
    })
    const b = new RedisPubSub(uniqueName('b'), url, {
      channelPrefix,
      logger: recordingLogger(logs),
      outcomes: health.outcomes,
      link: LINK,
      ...bOptions,
    })
    const room = uniqueRoom('held')
    const received: number[][] = []
    await b.subscribe(room, (message) => received.push([...message]))
    await untilDelivered(a, room, received, 'b receives before the fault')
    await until(() => health.ok('pubsub'), 'b proves both links')
    const close = () => Promise.all([a.close(), b.close()])
    return { a, b, room, received, health, logs, close }
  }

  it('half-open: the heartbeats find both dead connections, and b gets its room again on new ones', async () => {
    const { link, url } = await openLink()
    const { a, b, room, received, health, logs, close } = await twoServers(url)
    let losses = 0
    b.onPossibleLoss(() => losses++)
    try {
      link.blackhole()
      await until(() => !health.ok('pubsub'), 'pub/sub shows down')
      assert.equal(health.error('pubsub'), 'heartbeat: HEARTBEAT_MISSED')
      // The old connections stay dead after this; only new ones get through (a peer that vanished).
      link.restore()
      received.length = 0
      await untilDelivered(a, room, received, 'b receives the room it held, resubscribed')
      assert.ok(missed(logs, 'publisher') && missed(logs, 'subscriber'), 'each dead connection was found')
      assert.ok(losses >= 1, 'b is told that it may have missed messages meanwhile')
      await until(() => health.ok('pubsub'), 'pub/sub shows up again')
      const back: number[][] = []
      await a.subscribe(room, (message) => back.push([...message]))
      // As a server that loads a room announces itself (its digest): b may hold the channel alone by
      // now (its own announcement on reconnecting reached no one), and publishes to it only once
      // it hears another server there.
      a.publish(room, new Uint8Array([9]))
      await untilDelivered(b, room, back, "b's publishes reach a again")
    } finally {
      await close()
    }
  })

  /**
   * `b` publishes a room's deletion while its link is cut, and the publish fails; then the link
   * is restored. Resolves to a check of whether `a` has heard the deletion yet.
   */
  async function deletionNotTaken(setup: Awaited<ReturnType<typeof twoServers>>, link: TcpLink) {
    const { a, b, room, health } = setup
    const atA: number[][] = []
    await a.subscribe(room, (message) => atA.push([...message]))
    link.cut()
    b.publish(room, ROOM_DELETED_FRAME)
    await until(
      () => health.failures.some((failure) => failure.startsWith('pubsub publish')),
      "b's publish fails",
    )
    link.restore()
    return () => atA.some((message) => isRoomDeletedFrame(new Uint8Array(message)))
  }

  it('a deletion notice Redis did not take is published again until it does', async () => {
    const { link, url } = await openLink()
    const setup = await twoServers(url)
    try {
      const heard = await deletionNotTaken(setup, link)
      await until(heard, 'a hears the deletion')
    } finally {
      await setup.close()
    }
  })

  it('closing makes a last try with the deletion notices Redis has not taken yet', async () => {
    const { link, url } = await openLink()
    // No retry before the close: only the close can send it.
    const setup = await twoServers(url, { deletionRetryMs: 3_600_000 })
    try {
      const heard = await deletionNotTaken(setup, link)
      await until(() => setup.health.ok('pubsub'), 'b is back')
      await setup.b.close()
      await until(heard, 'a hears the deletion')
    } finally {
      await setup.close()
    }
  })

  it('accepted then reset, again and again, then healed: b receives again', async () => {
    const { link, url } = await openLink()
    const { a, room, received, health, close } = await twoServers(url)
    try {
      link.cut()
      link.resetAfterAccept()
      const accepted = link.accepted
      // Long enough for ioredis 5 to call a dead subscriber ready and refuse to reconnect it
      // (its pending handshake failed by maxRetriesPerRequest or a command timeout mid-retry).
      await until(() => link.accepted >= accepted + 50, 'b keeps reconnecting (a stuck client stops)')
      assert.equal(health.ok('pubsub'), false)
      link.restore()
      received.length = 0
      await untilDelivered(a, room, received, 'b receives again after the heal')
      await until(() => health.ok('pubsub'), 'pub/sub shows up again')
    } finally {
      await close()
    }
  })
})

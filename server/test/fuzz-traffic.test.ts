import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { isDeepStrictEqual } from 'node:util'
import { CloseCode } from '@symphony/client/wire'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { encodeAwarenessEntries, encodeSyncStep1, encodeUpdate } from '../src/protocol/codec.js'
import { assertKeptPace, startBystanders } from './helpers/bystander.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, uniqueRoom } from './helpers/clients.js'
import { openRaw } from './helpers/raw-socket.js'
import { contentOf, generateHistory, shuffled } from './helpers/real-documents.js'
import { seededRandom } from './helpers/seeded-random.js'
import { assertAlive, startTestServer } from './helpers/test-server.js'

afterEach(cleanUpAfterTest)

const TEST_FILE = 'server/test/fuzz-traffic.test.ts'
/** Actions per run: `npm test` runs a bounded number, `npm run test:long` many more. */
const ROUNDS = Number(process.env.SYMPHONY_TRAFFIC_ROUNDS ?? 400)
const LIMITS = { maxPendingBytes: 48 * 1024, maxPendingDeleteBytes: 2 * 1024, maxPresenceBytes: 2 * 1024 }
/** A sync request: its answer (sync step 2) is the one message a join does not send by itself. */
const SYNC_REQUEST = encodeSyncStep1(new Uint8Array([0]))

/** One thing a client sends, and the outcomes the server may answer it with. */
interface Action {
  kind: string
  frames: Uint8Array[]
  /** Updates the room holds if the server accepts the action (to build the expected document). */
  updates: Uint8Array[]
  /** Close codes allowed; `null` among them: the connection may stay open (accepted). */
  outcomes: (number | null)[]
  /**
   * Mutated bytes can forge ids: two structs claiming one id, which no CRDT reconciles. They go to
   * a room of their own, where the server must only refuse cleanly or apply them as Yjs does.
   */
  forged?: boolean
}

const UPDATE_OUTCOMES = [null, CloseCode.TooMuchPending]

/** A presence message: [client id, clock, state bytes] for each client. */
const presenceFrame = (entries: [number, number, Uint8Array][]) =>
  encodeAwarenessEntries(entries.map(([clientId, clock, state]) => ({ clientId, clock, state })))

/** An update sent as a client sends it, accepted unless the room's pending budget is full. */
const updateAction = (kind: string, update: Uint8Array): Action => ({
  kind,
  frames: [encodeUpdate(update)],
  updates: [update],
  outcomes: UPDATE_OUTCOMES,
})

/**
 * Real-but-adversarial traffic, all made before the run starts (so the generator never competes
 * with the bystanders): a real document's updates out of order, merged, with gaps; deletions of
 * items not sent yet; duplicates and no-ops; mutated bytes; huge state vectors; presence too big,
 * not UTF-8, not JSON, or for too many client ids.
 */
function generateActions(random: () => number, rounds: number): Action[] {
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)] as T
  const history = generateHistory({ random, sessions: 120, editsPerSession: 4 })
  const pool = shuffled(history.updates, random)
  const sent: Uint8Array[] = []
  const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))
  // Sync requests naming 20,000 to 120,000 clients the room never saw (made once, sent often).
  const hugeVectors = [20_000, 50_000, 120_000].map((clients) => {
    const encoder = encoding.createEncoder()
    encoding.writeVarUint(encoder, clients)
    for (let c = 0; c < clients; c++) {
      encoding.writeVarUint(encoder, 1_000_000 + c)
      encoding.writeVarUint(encoder, 1)
    }
    return encodeSyncStep1(encoding.toUint8Array(encoder))
  })
  const actions: Action[] = []
  for (let round = 0; round < rounds; round++) {
    const roll = random()
    const honest = () => {
      const update = pool.pop() ?? pick(history.updates)
      sent.push(update)
      return update
    }
    if (roll < 0.35) {
      const update = honest()
      actions.push(updateAction('update', update))
    } else if (roll < 0.45) {
      // Several updates merged, as an offline client sends them: with gaps when they are not contiguous.
      const batch = Array.from({ length: 2 + Math.floor(random() * 6) }, honest)
      const merged = Y.mergeUpdates(batch)
      actions.push(updateAction('merged', merged))
    } else if (roll < 0.5) {
      // Deletions only, possibly of items the room has not received yet.
      const update = pick(history.updates)
      const deletions = Y.diffUpdate(update, Y.encodeStateVectorFromUpdate(update))
      actions.push(updateAction('deletions', deletions))
    } else if (roll < 0.58) {
      // A duplicate of what was sent, or an empty update.
      const update = sent.length > 0 && random() < 0.8 ? pick(sent) : new Uint8Array([0, 0])
      actions.push(updateAction('duplicate', update))
    } else if (roll < 0.75) {
      const bytes = [...pick(history.updates)]
      for (let n = 1 + Math.floor(random() * 3); n > 0; n--) {
        bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256)
      }
      const mutated = Uint8Array.from(bytes)
      const outcomes = [...UPDATE_OUTCOMES, CloseCode.ProtocolError, CloseCode.DocumentTooLarge]
      actions.push({ ...updateAction('mutated', mutated), outcomes, forged: true })
    } else if (roll < 0.8) {
      actions.push({
        kind: 'state vector',
        frames: [pick(hugeVectors)],
        updates: [],
        outcomes: [CloseCode.ProtocolError],
      })
    } else {
      const client = 1 + Math.floor(random() * 1_000)
      const variants: [string, Uint8Array, (number | null)[]][] = [
        ['presence', presenceFrame([[client, 1, json({ name: 'ok', at: random() })]]), [null]],
        [
          'big presence',
          presenceFrame([[client, 1, json({ pad: 'x'.repeat(3_000) })]]),
          [CloseCode.MessageTooBig],
        ],
        [
          'presence not UTF-8',
          presenceFrame([[client, 1, Uint8Array.of(0x22, 0xff, 0x22)]]),
          [CloseCode.ProtocolError],
        ],
        ['presence not JSON', presenceFrame([[client, 1, json('x').subarray(1)]]), [CloseCode.ProtocolError]],
        [
          // Ids no other connection speaks for: only those count against the cap (a provider
          // sends back the others' presence it hears).
          'presence for many ids',
          presenceFrame(
            Array.from({ length: 12 }, (_, i) => [1_000_000 + 16 * actions.length + i, 1, json({ i })]),
          ),
          [CloseCode.ProtocolError],
        ],
      ]
      const [kind, frame, outcomes] = pick(variants)
      actions.push({ kind, frames: [frame], updates: [], outcomes })
    }
  }
  return actions
}

/** Sends an action on a connection of its own; resolves with its close code, or null if accepted. */
async function play(wsUrl: string, room: string, action: Action): Promise<number | null> {
  const socket = await openRaw(`${wsUrl}/${room}`, { maxPayload: 64 * 1024 * 1024 })
  const gone = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)))
  for (const frame of action.frames) socket.send(frame)
  // The server answers frames in order: an answer to this comes only after the action was handled.
  socket.send(SYNC_REQUEST)
  const answered = new Promise<null>((resolve) =>
    socket.on('message', (data: Buffer) => {
      if (data[0] === 0 && data[1] === 1) resolve(null)
    }),
  )
  const outcome = await Promise.race([gone, answered])
  socket.terminate()
  return outcome
}

describe('adversarial traffic (seeded: SYMPHONY_TRAFFIC_SEED replays a run)', () => {
  it('refuses with the documented codes, converges on all it accepts, and keeps the other rooms fast', async (t) => {
    const seeded = seededRandom('SYMPHONY_TRAFFIC_SEED')
    t.diagnostic(`seed ${seeded.seed}, ${ROUNDS} actions`)
    const actions = generateActions(seeded.random, ROUNDS)
    const server = await startTestServer({
      limits: { ...LIMITS, messagesPerSecond: 10_000, messageBurst: 10_000 },
    })
    const rooms = { real: uniqueRoom('traffic'), forged: uniqueRoom('forged') }
    const expected = { real: new Y.Doc(), forged: new Y.Doc() }
    const tally = new Map<string, number>()
    // Each action connects on its own: something must hold the rooms between them, or they unload
    // and reload from their snapshots (which a forged room's document does not survive unchanged).
    await Promise.all(Object.values(rooms).map((room) => openRaw(`${server.wsUrl}/${room}`)))
    const bystanders = await startBystanders(server.wsUrl)
    try {
      for (const [round, action] of actions.entries()) {
        const target = action.forged ? 'forged' : 'real'
        const outcome = await play(server.wsUrl, rooms[target], action)
        assert.ok(
          action.outcomes.includes(outcome),
          `round ${round}, ${action.kind}: ${outcome === null ? 'accepted' : `closed with ${outcome}`}`,
        )
        if (outcome === null) for (const update of action.updates) Y.applyUpdate(expected[target], update)
        const key = `${action.kind}: ${outcome ?? 'accepted'}`
        tally.set(key, (tally.get(key) ?? 0) + 1)
      }
      const report = await bystanders.stop()
      const sorted = [...report.latencies].sort((a, b) => a - b)
      const p99 = sorted[Math.floor(sorted.length * 0.99)] ?? 0
      t.diagnostic(
        `outcomes ${JSON.stringify(Object.fromEntries(tally))}; bystander p99 ${p99.toFixed(1)} ms (reference work ${report.referenceMs.toFixed(1)} ms)`,
      )
      assertKeptPace(report)
      for (const target of ['real', 'forged'] as const) {
        const doc = server.server.manager.loadedRoom(rooms[target])?.doc as Y.Doc
        const want = expected[target]
        assert.ok(isDeepStrictEqual(contentOf(doc), contentOf(want)), `${target}: every accepted update`)
        assert.deepEqual(Y.encodeStateVector(doc), Y.encodeStateVector(want))
      }
      const late = await connectSynced(server.wsUrl, rooms.real)
      assert.ok(
        isDeepStrictEqual(contentOf(late.doc), contentOf(expected.real)),
        'a joiner gets the same document',
      )
      await assertAlive(server)
    } catch (error) {
      throw seeded.replayable(error, TEST_FILE)
    }
  })
})

/**
 * `npm run bench:ack`: how long an edit waits for its acknowledgement (the sync-status answer
 * `@symphony/client` shows as "saved"), beside how long it takes to reach a client of another
 * server, in a three-server cluster (a Redis journal, a shared registry: one owner per room, the
 * other servers relaying to it). The owner acknowledges once its journal confirmed the edit.
 * Prints p50 and p99 of both, per run and as medians.
 */
import { parseArgs } from 'node:util'
import { MESSAGE_SYNC_STATUS, SYNC_STATUS_PARAM } from '@symphony/client/wire'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import WebSocket from 'ws'
import * as syncProtocol from 'y-protocols/sync'
import * as Y from 'yjs'
import { median } from '../measurement/median.js'
import { startSymphonyCluster3 } from './cluster-services.js'
import { cpuPinning } from './servers.js'

const { values } = parseArgs({
  options: {
    edits: { type: 'string', default: '200' },
    'interval-ms': { type: 'string', default: '50' },
    repeat: { type: 'string', default: '3' },
  },
})
const edits = Number(values.edits)
const intervalMs = Number(values['interval-ms'])
const repeat = Number(values.repeat)
const MESSAGE_SYNC = 0

/** A raw y-websocket client: a document kept in sync, and the sync-status answers it receives. */
class Peer {
  readonly doc = new Y.Doc()
  readonly #ws: WebSocket
  readonly #answers = new Map<number, () => void>()
  readonly synced: Promise<void>

  constructor(url: string, room: string) {
    this.#ws = new WebSocket(`${url}/${room}?${SYNC_STATUS_PARAM}=1`)
    this.#ws.binaryType = 'nodebuffer'
    let markSynced = () => {}
    this.synced = new Promise((resolve) => {
      markSynced = resolve
    })
    this.#ws.on('open', () => this.#send((encoder) => syncProtocol.writeSyncStep1(encoder, this.doc)))
    this.#ws.on('message', (data: Buffer) => {
      const decoder = decoding.createDecoder(new Uint8Array(data))
      const type = decoding.readVarUint(decoder)
      if (type === MESSAGE_SYNC) {
        const reply = encoding.createEncoder()
        encoding.writeVarUint(reply, MESSAGE_SYNC)
        const kind = syncProtocol.readSyncMessage(decoder, reply, this.doc, this)
        if (encoding.length(reply) > 1) this.#ws.send(encoding.toUint8Array(reply))
        if (kind === syncProtocol.messageYjsSyncStep2) markSynced()
      } else if (type === MESSAGE_SYNC_STATUS) {
        const payload = decoding.readVarUint8Array(decoder)
        if (payload.length > 0) this.#answers.get(decoding.readVarUint(decoding.createDecoder(payload)))?.()
      }
    })
  }

  /** Makes an edit, sends it and asks for its acknowledgement; resolves once answered. */
  edit(round: number): Promise<void> {
    const answered = new Promise<void>((resolve) => this.#answers.set(round, resolve))
    const update = captureUpdate(this.doc, () => this.doc.getMap<number>('rounds').set(String(round), round))
    this.#send((encoder) => syncProtocol.writeUpdate(encoder, update))
    const request = encoding.createEncoder()
    encoding.writeVarUint(request, MESSAGE_SYNC_STATUS)
    encoding.writeVarUint8Array(
      request,
      encoding.encode((payload) => encoding.writeVarUint(payload, round)),
    )
    this.#ws.send(encoding.toUint8Array(request))
    return answered
  }

  close(): void {
    this.#ws.close()
    this.doc.destroy()
  }

  #send(write: (encoder: encoding.Encoder) => void): void {
    const encoder = encoding.createEncoder()
    encoding.writeVarUint(encoder, MESSAGE_SYNC)
    write(encoder)
    this.#ws.send(encoding.toUint8Array(encoder))
  }
}

function captureUpdate(doc: Y.Doc, change: () => void): Uint8Array {
  let captured: Uint8Array = new Uint8Array()
  const keep = (update: Uint8Array) => {
    captured = update
  }
  doc.on('update', keep)
  change()
  doc.off('update', keep)
  return captured
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

interface RunResult {
  ack: [p50: number, p99: number]
  crossing: [p50: number, p99: number]
}

async function run(index: number): Promise<RunResult> {
  const pinning = cpuPinning()
  const cluster = await startSymphonyCluster3({ cpus: pinning?.server }, 'spread')
  const [writerUrl, observerUrl] = cluster.urls ?? []
  if (!writerUrl || !observerUrl) throw new Error('the cluster has fewer than two servers')
  const room = `ack-bench-${index}-${Date.now()}`
  const writer = new Peer(writerUrl, room)
  const observer = new Peer(observerUrl, room)
  try {
    await Promise.all([writer.synced, observer.synced])
    const rounds = observer.doc.getMap<number>('rounds')
    const ack: number[] = []
    const crossing: number[] = []
    for (let round = 1; round <= edits; round++) {
      const started = performance.now()
      const arrived = new Promise<void>((resolve) => {
        const seen = () => {
          if (!rounds.has(String(round))) return
          rounds.unobserve(seen)
          resolve()
        }
        rounds.observe(seen)
      })
      await Promise.all([
        writer.edit(round).then(() => ack.push(performance.now() - started)),
        arrived.then(() => crossing.push(performance.now() - started)),
      ])
      await new Promise((resolve) => setTimeout(resolve, intervalMs))
    }
    ack.sort((a, b) => a - b)
    crossing.sort((a, b) => a - b)
    return {
      ack: [percentile(ack, 50), percentile(ack, 99)],
      crossing: [percentile(crossing, 50), percentile(crossing, 99)],
    }
  } finally {
    writer.close()
    observer.close()
    await cluster.stop()
  }
}

const ms = (value: number | null) => (value === null ? '-' : `${value.toFixed(2)} ms`)
const results: RunResult[] = []
for (let index = 0; index < repeat; index++) {
  const result = await run(index)
  results.push(result)
  console.log(
    `run ${index + 1}: acknowledged p50 ${ms(result.ack[0])} p99 ${ms(result.ack[1])}; ` +
      `at another server's client p50 ${ms(result.crossing[0])} p99 ${ms(result.crossing[1])}`,
  )
}
const of = (pick: (result: RunResult) => number) => median(results.map(pick))
const ackP50 = of((r) => r.ack[0])
const crossingP50 = of((r) => r.crossing[0])
console.log(
  `median of ${repeat} runs of ${edits} edits: acknowledged p50 ${ms(ackP50)} p99 ${ms(of((r) => r.ack[1]))}; ` +
    `at another server's client p50 ${ms(crossingP50)} p99 ${ms(of((r) => r.crossing[1]))}; ` +
    `crossing / acknowledgement at p50: ${ackP50 && crossingP50 ? (crossingP50 / ackP50).toFixed(1) : '-'} ×`,
)

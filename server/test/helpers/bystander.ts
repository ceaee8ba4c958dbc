import assert from 'node:assert/strict'
import * as Y from 'yjs'
import { connectSynced, eventually, uniqueRoom } from './clients.js'

/**
 * How many units of reference work (`referenceWorkMs`) a bystander edit may wait while the server
 * is attacked. Applying a whole 15 MiB update in one go costs about 20 units, a quadratic check
 * hundreds; a busy machine slows the reference as it slows the server, so the ratio holds where a
 * fixed time does not.
 */
export const STALL_UNITS = 40

export interface BystanderReport {
  /** Each probe's round trip under the attack, in ms. */
  latencies: number[]
  /** This process's time for the reference work, measured as the probing ends, in ms. */
  referenceMs: number
}

export interface Bystanders {
  /** Stops probing; every probe's round trip, or fails if one never arrived. */
  stop(): Promise<BystanderReport>
}

/**
 * Two clients in a room of their own that keep editing while a test attacks the server: each
 * edit's trip from one to the other is timed, so a stalled event loop or a starved room shows.
 */
export async function startBystanders(
  wsUrl: string,
  params: Record<string, string> = {},
  intervalMs = 50,
): Promise<Bystanders> {
  const room = uniqueRoom('bystander')
  const [writer, reader] = await Promise.all([
    connectSynced(wsUrl, room, params),
    connectSynced(wsUrl, room, params),
  ])
  const sentAt = new Map<number, number>()
  const latencies: number[] = []
  reader.doc.getMap<number>('probe').observe((event) => {
    for (const key of event.keysChanged) {
      const started = sentAt.get(Number(key))
      if (started !== undefined) latencies.push(performance.now() - started)
    }
  })
  let next = 0
  const probe = () => {
    sentAt.set(next, performance.now())
    writer.doc.getMap<number>('probe').set(String(next), next)
    next++
  }
  const timer = setInterval(probe, intervalMs)
  return {
    stop: async () => {
      clearInterval(timer)
      probe() // one more after the attack, however short it was
      await eventually(() => latencies.length === next, `all ${next} bystander edits arrive`)
      writer.destroy()
      reader.destroy()
      return { latencies, referenceMs: referenceWorkMs() }
    },
  }
}

const REFERENCE_UPDATE = (() => {
  const doc = new Y.Doc()
  const map = doc.getMap('m')
  doc.transact(() => {
    for (let i = 0; i < 10_000; i++) map.set(`key-${i}`, `value ${i}`)
  })
  return Y.encodeStateAsUpdate(doc)
})()

/** The median time to load and encode a 10,000-entry document (220 KB) here: this run's unit of work. */
export function referenceWorkMs(): number {
  const times: number[] = []
  for (let run = 0; run < 7; run++) {
    const started = performance.now()
    const doc = new Y.Doc()
    Y.applyUpdate(doc, REFERENCE_UPDATE)
    Y.encodeStateAsUpdate(doc)
    doc.destroy()
    if (run >= 2) times.push(performance.now() - started) // the first runs warm the JIT up
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? 0
}

/** Fails if a bystander edit waited more than `STALL_UNITS` units of reference work: a stall. */
export function assertKeptPace({ latencies, referenceMs }: BystanderReport): void {
  const worst = Math.max(...latencies)
  assert.ok(
    worst <= STALL_UNITS * referenceMs,
    `a bystander edit took ${worst.toFixed(0)} ms, over ${STALL_UNITS} × the ${referenceMs.toFixed(1)} ms reference work`,
  )
}

/**
 * `npm run bench:failover`: how long a room's users wait to edit again after its owner fails. A
 * three-server cluster (as `npm run bench`'s cluster rows run it: a Redis journal, a registry in
 * moto's DynamoDB, here with the snapshots in moto's S3 so the next owner reads the owner's saves);
 * each room is opened on the first server first (it owns the room), then by one user on each of
 * the two others (relayed to it). Then the first server fails (`--fault`): `kill`, SIGKILL; or
 * `cut-off`, its links to Redis and moto turn into black holes while its clients and the other
 * servers still reach it (a partition, past which its lease of `REGISTRY_LEASE_MS` runs out); or
 * `drain`, SIGTERM: it saves, releases and closes its clients, and the next owner loads the room
 * from the store and the journal (`--room-kib`: the text each room holds, what that load reads). Each
 * room's user on the second server edits at once, and the bench times, per room, until that edit
 * is acknowledged (`@symphony/client`'s `hasUnsyncedChanges()` false: journaled by the next owner)
 * and until it reaches the room's user on the third server. The clients are `@symphony/client`
 * with its default reconnect schedule, as an app runs it. Prints p50 and p99 per run, and their
 * medians over the runs.
 */
import { parseArgs } from 'node:util'
import { createClient, type Room, type SymphonyClient } from '@symphony/client'
import WebSocket from 'ws'
import { median } from '../measurement/median.js'
import { startSymphonyCluster3 } from './cluster-services.js'
import { type LatencyRelay, startLatencyRelay } from './latency-relay.js'
import { cpuPinning } from './servers.js'

const { values } = parseArgs({
  options: {
    rooms: { type: 'string', default: '50' },
    repeat: { type: 'string', default: '3' },
    'timeout-s': { type: 'string', default: '60' },
    fault: { type: 'string', default: 'kill' },
    /** Text each room holds before the fault, in KiB: what the next owner loads. */
    'room-kib': { type: 'string', default: '0' },
  },
})
const fault = String(values.fault) as 'kill' | 'cut-off' | 'drain'
const FAULT_NAMES = { kill: 'SIGKILL', 'cut-off': 'cut-off', drain: 'SIGTERM (drain)' }
const roomKib = Number(values['room-kib'])
if (fault !== 'kill' && fault !== 'cut-off' && fault !== 'drain') {
  console.error('bench:failover: --fault is kill, cut-off or drain')
  process.exit(2)
}
const rooms = Number(values.rooms)
const repeat = Number(values.repeat)
const timeoutMs = Number(values['timeout-s']) * 1000
/** How often a room's state is looked at while it fails over: the times' resolution. */
const POLL_MS = 5

function client(url: string): SymphonyClient {
  return createClient({ url, WebSocket: WebSocket as unknown as typeof globalThis.WebSocket })
}

/** Resolves with the ms from `start` until `done()` holds, or NaN past the timeout. */
async function timeUntil(done: () => boolean, start: number): Promise<number> {
  while (!done()) {
    if (performance.now() - start > timeoutMs) return Number.NaN
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
  return performance.now() - start
}

/** Whether process `pid` still runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

interface RunResult {
  acknowledged: [p50: number, p99: number]
  reached: [p50: number, p99: number]
  /** Rooms whose edit was not acknowledged, or did not reach the third user, within the timeout. */
  stuck: number
  /** With `drain`: ms from the SIGTERM until the owner's process had exited. */
  exitedMs: number
}

async function run(index: number): Promise<RunResult> {
  const pinning = cpuPinning()
  // The first server's links to Redis and moto, which the cut-off fault turns into black holes.
  const links: LatencyRelay[] = []
  const throughLinks = async (index: number, env: Record<string, string>) => {
    if (index !== 0 || fault !== 'cut-off') return env
    const [redis, aws] = await Promise.all(
      [env.JOURNAL, env.AWS_ENDPOINT_URL].map((url) => startLatencyRelay(Number(new URL(url ?? '').port), 0)),
    )
    links.push(redis as LatencyRelay, aws as LatencyRelay)
    const redisUrl = `redis://127.0.0.1:${redis?.port}`
    return { ...env, PUBSUB: redisUrl, JOURNAL: redisUrl, AWS_ENDPOINT_URL: `http://127.0.0.1:${aws?.port}` }
  }
  const cluster = await startSymphonyCluster3({ cpus: pinning?.server }, 'spread', {
    sharedSnapshots: true,
    envOf: throughLinks,
  })
  const [ownerUrl, editorUrl, observerUrl] = cluster.urls ?? []
  const ownerPid = cluster.pids?.[0]
  if (!ownerUrl || !editorUrl || !observerUrl || !ownerPid)
    throw new Error('the cluster has fewer than three servers')
  const clients = [client(ownerUrl), client(editorUrl), client(observerUrl)]
  const [atOwner, atEditor, atObserver] = clients as [SymphonyClient, SymphonyClient, SymphonyClient]
  try {
    const names = Array.from({ length: rooms }, (_, i) => `failover-${index}-${Date.now()}-${i}`)
    const owned: Room[] = names.map((name) => atOwner.enter(name))
    await Promise.all(owned.map((room) => room.whenSynced()))
    const editors = names.map((name) => atEditor.enter(name))
    const observers = names.map((name) => atObserver.enter(name))
    await Promise.all([...editors, ...observers].map((room) => room.whenSynced()))
    const text = 'x'.repeat(roomKib * 1024)
    for (const room of owned) {
      if (text) room.doc.getText('t').insert(0, text)
      room.doc.getMap('m').set('before', true)
    }
    await Promise.all(
      observers.map((room) =>
        timeUntil(() => room.doc.getMap('m').get('before') === true, performance.now()),
      ),
    )
    if (fault === 'kill') process.kill(ownerPid, 'SIGKILL')
    else if (fault === 'drain') process.kill(ownerPid, 'SIGTERM')
    else for (const link of links) link.blackhole()
    const killedAt = performance.now()
    // A draining owner still acknowledges until it lets go: the edit is made once it has exited,
    // and timed from the SIGTERM (what its users wait through: the drain, then the next load).
    const exitedMs = fault === 'drain' ? await timeUntil(() => !alive(ownerPid), killedAt) : Number.NaN
    const times = await Promise.all(
      editors.map(async (editor, i) => {
        editor.doc.getMap('m').set('after', i)
        const observer = observers[i] as Room
        const [acknowledged, reached] = await Promise.all([
          timeUntil(() => !editor.hasUnsyncedChanges(), killedAt),
          timeUntil(() => observer.doc.getMap('m').get('after') === i, killedAt),
        ])
        return { acknowledged, reached }
      }),
    )
    const sorted = (pick: (t: (typeof times)[number]) => number) =>
      times
        .map(pick)
        .filter((ms) => !Number.isNaN(ms))
        .sort((a, b) => a - b)
    const acknowledged = sorted((t) => t.acknowledged)
    const reached = sorted((t) => t.reached)
    return {
      acknowledged: [percentile(acknowledged, 50), percentile(acknowledged, 99)],
      reached: [percentile(reached, 50), percentile(reached, 99)],
      stuck: times.filter((t) => Number.isNaN(t.acknowledged) || Number.isNaN(t.reached)).length,
      exitedMs,
    }
  } finally {
    await Promise.all(clients.map((c) => c.destroy()))
    await cluster.stop()
    await Promise.all(links.map((link) => link.close()))
  }
}

const results: RunResult[] = []
for (let i = 0; i < repeat; i++) {
  const result = await run(i)
  results.push(result)
  const [a50, a99] = result.acknowledged
  const [r50, r99] = result.reached
  console.log(
    `run ${i + 1}: edit acknowledged after the owner's ${FAULT_NAMES[fault]} p50 ${a50.toFixed(0)} ms, p99 ${a99.toFixed(0)} ms; reached the third server's user p50 ${r50.toFixed(0)} ms, p99 ${r99.toFixed(0)} ms; stuck ${result.stuck} of ${rooms}${Number.isNaN(result.exitedMs) ? '' : `; the owner exited after ${result.exitedMs.toFixed(0)} ms`}`,
  )
}
const med = (pick: (r: RunResult) => number) => median(results.map(pick)) ?? Number.NaN
console.log(
  `bench:failover --fault ${fault}: ${rooms} rooms, ${repeat} runs, medians: acknowledged p50 ${med((r) => r.acknowledged[0]).toFixed(0)} ms, p99 ${med((r) => r.acknowledged[1]).toFixed(0)} ms; reached p50 ${med((r) => r.reached[0]).toFixed(0)} ms, p99 ${med((r) => r.reached[1]).toFixed(0)} ms; stuck ${results.reduce((sum, r) => sum + r.stuck, 0)}`,
)
process.exit(0)

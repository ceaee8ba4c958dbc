/**
 * `npm run bench:cold-load`: what loading a big document from the snapshot store costs the users
 * of every other room. Our server (pinned to CPU 0) serves the `symphony` workload to 1,000 users
 * (generator on CPU 1); mid-run a client opens a room whose 1.5 MB snapshot is on disk. Prints the
 * time to sync it, the server's event-loop lag meanwhile, and the other users' p99 in those seconds.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import * as Y from 'yjs'
import { metric } from '../measurement/server-stats.js'
import { LeanWebSocket } from '../virtual-users/lean-websocket.js'
import { readFrame, SYNC_STEP2, syncStep1 } from '../virtual-users/wire.js'
import { whiteboard } from './documents.js'
import { runGenerator } from './generator.js'
import { cpuPinning, startSymphony } from './servers.js'

const { values } = parseArgs({
  options: {
    rooms: { type: 'string', default: '250' },
    'document-kib': { type: 'string', default: '1536' },
    duration: { type: 'string', default: '30' },
    ramp: { type: 'string', default: '5' },
  },
})
const pinning = cpuPinning()
const BIG_ROOM = 'cold-load-big'
const folder = mkdtempSync(join(tmpdir(), 'symphony-cold-load-'))
const snapshots = join(folder, 'snapshots')
mkdirSync(snapshots)
const state = whiteboard(Number(values['document-kib']) * 1024)
writeFileSync(join(snapshots, `${BIG_ROOM}.ybin`), state)
console.log(`cold load: a ${(state.length / 2 ** 20).toFixed(2)} MiB snapshot, ${values.rooms} busy rooms`)

const server = await startSymphony({
  cpus: pinning?.server,
  env: { DATABASE_URL: 'none', SNAPSHOTS: `file://${snapshots}` },
})
try {
  const startedAt = Date.now()
  const report = runGenerator({
    urls: [server.url],
    serverPids: [server.pid],
    workload: 'symphony',
    rooms: Number(values.rooms),
    duration: String(values.duration),
    ramp: String(values.ramp),
    json: join(folder, 'report.json'),
    cpus: pinning?.generator,
  })
  // Halfway through the steady load.
  await sleep((Number(values.ramp) + Number(values.duration) / 2) * 1000)
  await eventLoopLag(server.url) // prom-client resets its lag histogram at each scrape
  const coldAt = Date.now()
  const syncMs = await syncRoom(`${server.url}/${BIG_ROOM}`)
  const lag = await eventLoopLag(server.url)
  const { timeline, steady } = await report
  const first = Math.floor((coldAt - startedAt) / 1000)
  const last = Math.ceil((coldAt + syncMs - startedAt) / 1000) + 1
  const during = timeline.filter((s) => s.second >= first && s.second <= last)
  const worst = (pick: (s: (typeof timeline)[number]) => number) => Math.max(0, ...during.map(pick))
  console.log(`room synced in ${syncMs.toFixed(0)} ms (connect, load, sync step 2 received)`)
  console.log(`server event-loop lag while it loaded: max ${lag.max} ms, p99 ${lag.p99} ms`)
  console.log(
    `other users, seconds ${first}-${last}: update p99 ${worst((s) => s.latency.update.p99)} ms, presence p99 ${worst((s) => s.latency.presence.p99)} ms (worst second)`,
  )
  console.log(
    `other users, whole steady state: update p99 ${steady.latency.update.p99} ms, presence p99 ${steady.latency.presence.p99} ms`,
  )
} finally {
  await server.stop()
  rmSync(folder, { recursive: true, force: true })
}

/** Connects, asks for everything, and resolves with the milliseconds until the answer arrived. */
function syncRoom(url: string): Promise<number> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const socket = new LeanWebSocket(url, {
      open: () => socket.send(syncStep1(Y.encodeStateVector(new Y.Doc()))),
      message: (data) => {
        const frame = readFrame(data)
        if (frame.type !== 'sync' || frame.kind !== SYNC_STEP2) return
        resolve(performance.now() - started)
        socket.close()
      },
      refused: (_status, reason) => reject(new Error(reason)),
      close: (code) => reject(new Error(`closed ${code} before sync`)),
    })
  })
}

async function eventLoopLag(serverUrl: string): Promise<{ max: number; p99: number }> {
  const text = await (await fetch(`${serverUrl.replace(/^ws/, 'http')}/metrics`)).text()
  const seconds = (name: string) => metric(text, name) ?? Number.NaN
  const ms = (value: number) => Math.round(value * 1000)
  return {
    max: ms(seconds('nodejs_eventloop_lag_max_seconds')),
    p99: ms(seconds('nodejs_eventloop_lag_p99_seconds')),
  }
}

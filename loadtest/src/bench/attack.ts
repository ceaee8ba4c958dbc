/**
 * `npm run bench:attack`: the memory an attacker holding one token can make our server use, and
 * what it costs everyone else. The built server runs as `npm start` runs it (auth on, PGlite in its
 * own process), pinned to CPU 0; on CPU 1 a process of their own keeps bystanders editing in rooms
 * of their own, first alone, then while this process, with one read-write token for `attack/*`,
 * runs every attack at once on loopback:
 * - sockets that ask a 2 MiB room for its whole state within the sync-request limit and never read;
 * - a sync flood: sockets that each ask past the burst, are closed (4002) and come back;
 * - presence at its caps: sockets holding the most presence states, each as big as allowed;
 * - the largest updates the limits allow, of minimal structs, several in a row in each of a few
 *   rooms at once: as big as a message may be, and as many structs as a document may hold;
 * - rooms kept loaded, each holding as many structs as a document may (`--document-rooms`);
 * - what content costs (issue 47): small updates each building 6.5 MB of JSON objects; one item
 *   of 7,000,000 `{}` and 75 values of 100,000 each in one update; readers of another tenant's
 *   stored rooms all joining at once; the big room read as JSON through the REST API, several
 *   reads at once; a token whose `sub` is 10,000 characters; 150 readers joining a 20 MB text
 *   together, each reading it as fast as its share of this process allows, and joining again.
 * A victim tenant's reader stays in a room of its own as large as the attacker's: its closes are
 * counted (it must be served throughout).
 * The server's RSS is sampled from /proc (VmRSS, and VmHWM for the peak) against the 768 MiB
 * target, and the bystanders' round trip under attack is compared with the same without it.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { setPriority } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { SignJWT } from 'jose'
import * as Y from 'yjs'
import { addEncoded, newHistogram, summarize } from '../measurement/histogram.js'
import { metric } from '../measurement/server-stats.js'
import { LeanWebSocket } from '../virtual-users/lean-websocket.js'
import { readFrame, SYNC_STEP2, syncStep1, syncUpdate } from '../virtual-users/wire.js'
import type { BystanderCommand, BystanderReport } from './attack-bystanders.js'
import {
  CloseTally,
  documentHolders,
  nonReaders,
  presenceAtCaps,
  type Running,
  syncFlooders,
  type UpdateOutcome,
  updatesInARow,
} from './attack-clients.js'
import {
  documentReaders,
  jsonValueWriter,
  readersJoiningTogether,
  type StatusTally,
  wholeStateReaders,
} from './attack-content.js'
import { longText, whiteboard } from './documents.js'
import { arrayOfObjectsUpdate } from './json-values.js'
import { MINIMAL_KINDS, minimalUpdate } from './minimal-structs.js'
import { cpuPinning, pin, startSymphony } from './servers.js'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '30' },
    quiet: { type: 'string', default: '10' },
    'room-mib': { type: 'string', default: '2' },
    'non-readers': { type: 'string', default: '40' },
    'sync-per-second': { type: 'string', default: '1.5' },
    flooders: { type: 'string', default: '4' },
    'presence-sockets': { type: 'string', default: '20' },
    'presence-ms': { type: 'string', default: '1000' },
    'update-rooms': { type: 'string', default: '2' },
    'update-wait': { type: 'string', default: '15' },
    'document-rooms': { type: 'string', default: '6' },
    structs: { type: 'string' },
    env: { type: 'string', multiple: true, default: [] },
    /** A folder for the server's CPU profiles (`--cpu-prof`: the main thread's and each worker's). */
    profile: { type: 'string' },
    'bystander-rooms': { type: 'string', default: '10' },
    'json-updates': { type: 'string', default: '40' },
    'stored-rooms': { type: 'string', default: '24' },
    'stored-kib': { type: 'string', default: '1024' },
    'document-readers': { type: 'string', default: '3' },
    'value-updates': { type: 'string', default: '1' },
    'probe-ms': { type: 'string', default: '100' },
    'text-readers': { type: 'string', default: '150' },
    'text-mib': { type: 'string', default: '20' },
    /** Reads the server's /metrics once a second: where its RSS is (V8 heap, external memory). */
    'memory-split': { type: 'boolean', default: false },
  },
})
const MiB = 2 ** 20
/** Server settings (`--env NAME=value`, repeatable) on top of `npm start`'s. */
const serverEnv = Object.fromEntries(
  (values.env ?? []).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
)
/** As many structs as a document may hold: the server's `MAX_DOCUMENT_STRUCTS` (default 500,000). */
const atCeiling = Number(values.structs ?? serverEnv.MAX_DOCUMENT_STRUCTS ?? 500_000)
const TARGET_RSS_MIB = 768
/** How long the setup may take to fill one room before the bench stops with the reason. */
const FILL_DEADLINE_MS = 120_000
/** The server's defaults, which this bench runs against. */
const MAX_MESSAGE_BYTES = 16 * MiB
const MAX_PRESENCE_BYTES = 16 * 1024
const AWARENESS_CLIENTS_PER_CONNECTION = 8
/** The sync-request limit's burst: a flooder asks for more at once. */
const SYNC_BURST = 10

const pinning = cpuPinning()
const ATTACK_NICENESS = 10
// The attack and the bystanders off the server's CPU: neither is timed as the server's delay.
if (pinning) pin(process.pid, pinning.generator)
const secret = randomBytes(32).toString('hex')
const token = (room: string, subject: string) =>
  new SignJWT({ room, access: 'rw' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(subject)
    .setExpirationTime('2h')
    .sign(new TextEncoder().encode(secret))

console.log('attack: making the documents and updates')
const room = whiteboard(Number(values['room-mib']) * MiB)
const lanes = Number(values['update-rooms'])
// Each send carries ids of its own, so none repeats what a room holds already.
const updates = Array.from({ length: lanes }, (_, lane) => [
  ...MINIMAL_KINDS.map((kind, k) => {
    const client = kind === 'client-per-struct' ? (lane * 8 + k + 1) * 2 ** 24 : lane * 8 + k + 1
    return {
      label: `${kind}, message limit`,
      update: minimalUpdate(kind, { bytes: MAX_MESSAGE_BYTES - 16, client }),
    }
  }),
  {
    // Its structs and its client (the server counts one as 8): as many as an empty document may gain.
    label: `gc-item, ${atCeiling - 9} structs`,
    update: minimalUpdate('gc-item', { structs: atCeiling - 9, client: lane * 8 + 7 }),
  },
])
const jsonValueUpdates = [
  { label: 'one item of 7,000,000 {}', update: arrayOfObjectsUpdate({ elements: 7_000_000, client: 90 }) },
  {
    label: '75 values of 100,000 {}',
    update: arrayOfObjectsUpdate({ elements: 100_000, entries: 75, key: 'v', client: 91 }),
  },
]
for (const { label, update } of [...(updates[0] ?? []), ...jsonValueUpdates])
  console.log(`  ${label}: ${(update.length / MiB).toFixed(2)} MiB`)

const apiSecret = randomBytes(24).toString('hex')
const server = await startSymphony({
  cpus: pinning?.server,
  env: { ...serverEnv, AUTH_SECRET: secret, API_SECRET: apiSecret },
  nodeFlags: values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [],
})
const attacker = await token('attack/*', 'attacker')
const attackUrl = (name: string) => `${server.url}/${encodeURIComponent(name)}?token=${attacker}`
const victimToken = await token('victim/*', 'victim')
const rss = rssSampler(server.pid)
try {
  await fill(attackUrl('attack/big'), room)
  await fill(`${server.url}/victim%2Fbig?token=${victimToken}`, room)
  const storedRoom = whiteboard(Number(values['stored-kib']) * 1024)
  const storedUrls = Array.from({ length: Number(values['stored-rooms']) }, (_, i) =>
    attackUrl(`attack/stored-${i}`),
  )
  for (const url of storedUrls) await fill(url, storedRoom)
  const textReaders = Number(values['text-readers'])
  if (textReaders > 0) await fill(attackUrl('attack/text'), ...longText(Number(values['text-mib']) * MiB))
  // Saved and unloaded after ROOM_GRACE_MS (5 s by default), so joining them loads them.
  await sleep(8_000)
  const longSubject = await token('attack/*', 'x'.repeat(10_000))
  const longSubjectStatus = await refusedStatus(`${server.url}/attack%2Flong?token=${longSubject}`)
  const victim = new CloseTally()
  const victimReader = readersJoiningTogether([`${server.url}/victim%2Fbig?token=${victimToken}`], victim)
  const bystanderUrls = await Promise.all(
    Array.from({ length: Number(values['bystander-rooms']) }, async (_, i) => {
      const name = `bystander-${i}`
      return `${server.url}/${name}?token=${await token(name, `bystander-${i}`)}`
    }),
  )
  const timing = await startBystanders(bystanderUrls, Number(values['probe-ms']))
  // The attack yields the shared CPU to the bystanders' process (started before, at the usual
  // priority): what they time is the server's delay, not the attack's own load on their core.
  if (pinning) setPriority(ATTACK_NICENESS)
  await sleep(Number(values.quiet) * 1000)
  const quietRss = rss.now()
  const tally = new CloseTally()
  const outcomes: UpdateOutcome[] = []
  const documentStatuses: StatusTally = new Map()
  const big = attackUrl('attack/big')
  timing.phase('attack')
  const attackCpu = process.cpuUsage()
  console.log(`attack: ${values.duration} s, server RSS before ${quietRss.toFixed(0)} MiB`)
  const split = values['memory-split'] ? memorySplit(server.url.replace(/^ws/, 'http')) : null
  const textTally = new CloseTally()
  const text = textReaders > 0 ? wholeStateReaders(attackUrl('attack/text'), textReaders, textTally) : null
  const attacks: Running[] = [
    ...(text ? [text] : []),
    nonReaders(Number(values['non-readers']), big, Number(values['sync-per-second']), tally),
    syncFlooders(Number(values.flooders), big, SYNC_BURST + 2, tally),
    presenceAtCaps(
      Number(values['presence-sockets']),
      big,
      {
        clients: AWARENESS_CLIENTS_PER_CONNECTION,
        stateBytes: MAX_PRESENCE_BYTES,
        intervalMs: Number(values['presence-ms']),
      },
      tally,
    ),
    documentHolders(
      Array.from({ length: Number(values['document-rooms']) }, (_, i) => attackUrl(`attack/document-${i}`)),
      minimalUpdate('gc-item', { structs: atCeiling - 9, client: 1 }),
      tally,
    ),
    ...updates.map((list, lane) =>
      updatesInARow(
        attackUrl(`attack/updates-${lane}`),
        list,
        Number(values['update-wait']) * 1000,
        outcomes,
      ),
    ),
    ...(Number(values['json-updates']) > 0
      ? [
          jsonValueWriter(
            attackUrl('attack/json'),
            { count: Number(values['json-updates']), elements: 100_000 },
            tally,
          ),
        ]
      : []),
    ...Array.from({ length: Number(values['value-updates']) }, (_, lane) =>
      updatesInARow(
        attackUrl(`attack/values-${lane}`),
        jsonValueUpdates,
        Number(values['update-wait']) * 1000,
        outcomes,
      ),
    ),
    readersJoiningTogether(storedUrls, tally),
    documentReaders(
      `${server.url.replace(/^ws/, 'http')}/api/v1/rooms/attack%2Fbig/document`,
      apiSecret,
      Number(values['document-readers']),
      documentStatuses,
    ),
  ]
  await sleep(Number(values.duration) * 1000)
  timing.phase('after')
  const { user, system } = process.cpuUsage(attackCpu)
  const generatorShare = (user + system) / 1e4 / Number(values.duration)
  await Promise.all(attacks.map((attack) => attack.stop()))
  await victimReader.stop()
  const measured = await timing.stop()
  const quiet = summarize(measured.quiet)
  const attacked = summarize(measured.attack)
  const peak = rss.peak()
  const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : 'n/a')
  console.log(
    `\nserver RSS: before the attack ${quietRss.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB (VmHWM)`,
  )
  console.log(
    `  target ≤ ${TARGET_RSS_MIB} MiB: ${peak <= TARGET_RSS_MIB ? 'met' : 'NOT met'}${rss.exited() ? ' (the server exited during the run)' : ''}`,
  )
  console.log(`  RSS by second (max): ${rss.bySecond().join(' ')}`)
  if (split) for (const line of split.stop()) console.log(`  ${line}`)
  console.log(
    `bystanders (${bystanderUrls.length} rooms, an edit every ${values['probe-ms']} ms): ` +
      `quiet p50 ${quiet.p50} ms, p99 ${quiet.p99} ms (${quiet.count}); ` +
      `under attack p50 ${attacked.p50} ms, p99 ${attacked.p99} ms (${attacked.count}); ` +
      `ratio p50 ${ratio(attacked.p50, quiet.p50)}, p99 ${ratio(attacked.p99, quiet.p99)}; lost ${measured.lost}`,
  )
  console.log(
    `the attack's process used ${generatorShare.toFixed(0)} % of a core (it runs below the bystanders' priority)`,
  )
  console.log(
    `attacker's sockets closed with: ${tally} (1005/1006: a reset, no close frame read: the non-readers read none)`,
  )
  console.log(
    `victim's reader (another tenant's room as large as the attacker's) closed with: ${victim} (none: served throughout)`,
  )
  console.log(
    `readers of the ${values['text-mib']} MB text (${textReaders} joining together, each again once it has it): ` +
      `${text?.downloads() ?? 0} whole states read; closed with: ${textTally} (none: a slow link is served)`,
  )
  console.log(
    `documents read as JSON (${values['document-readers']} at once): ${[...documentStatuses].map(([status, n]) => `${status} × ${n}`).join(', ')}`,
  )
  console.log(`a token whose sub is 10,000 characters: ${longSubjectStatus}`)
  console.log('big updates (how each ended, how often, median seconds):')
  for (const [how, seconds] of byOutcome(outcomes)) {
    const sorted = seconds.sort((a, b) => a - b)
    console.log(`  ${how}: ${seconds.length} × ${(sorted[Math.floor(sorted.length / 2)] ?? 0).toFixed(1)} s`)
  }
} finally {
  rss.stop()
  await server.stop()
}

/** The updates' outcomes grouped by update and by how each ended, with the seconds each took. */
function byOutcome(outcomes: UpdateOutcome[]): Map<string, number[]> {
  const groups = new Map<string, number[]>()
  for (const o of outcomes) {
    const how =
      o.code === null
        ? 'kept open (taken)'
        : o.opened
          ? `closed ${o.code} ${o.reason}`
          : `turned away before the upgrade (${o.code}), not sent`
    const key = `${o.label} (${(o.bytes / MiB).toFixed(2)} MiB): ${how}`
    groups.set(key, [...(groups.get(key) ?? []), o.seconds])
  }
  return groups
}

/** Starts the bystanders' process (see attack-bystanders.ts) and resolves once they edit. */
async function startBystanders(urls: string[], intervalMs: number) {
  const child: ChildProcess = fork(new URL('./attack-bystanders.js', import.meta.url))
  if (pinning && child.pid) pin(child.pid, pinning.generator)
  const command = (message: BystanderCommand) => child.send(message)
  const next = () =>
    new Promise<BystanderReport>((resolve, reject) => {
      child.once('message', (report: BystanderReport) =>
        'failed' in report ? reject(new Error(`bystanders: ${report.failed}`)) : resolve(report),
      )
      child.once('exit', (code) => reject(new Error(`the bystanders' process exited (${code})`)))
    })
  const started = next()
  command({ start: { urls, intervalMs } })
  await started
  return {
    phase: (phase: 'attack' | 'after') => command({ phase }),
    stop: async () => {
      const stopped = next()
      command({ stop: true })
      const report = await stopped
      if (!('lost' in report)) throw new Error('bystanders: no report')
      const quiet = newHistogram()
      const attack = newHistogram()
      addEncoded(quiet, report.quiet)
      addEncoded(attack, report.attack)
      return { quiet, attack, lost: report.lost }
    },
  }
}

/**
 * Writes `parts` into the room at `url` and waits until a reader gets about all of it. A writer
 * closed or turned away before then (the server busy loading what the setup wrote before: 1013,
 * or 503 at the door) writes again on a new socket once a second has passed; past
 * `FILL_DEADLINE_MS` the bench stops, naming the last refusal, rather than waiting for ever.
 */
async function fill(url: string, ...parts: Uint8Array[]): Promise<void> {
  const bytes = parts.reduce((sum, part) => sum + part.length, 0)
  const deadline = performance.now() + FILL_DEADLINE_MS
  let writer: { socket: LeanWebSocket | null; closed: string | null } = { socket: null, closed: 'not open' }
  for (;;) {
    if (writer.closed !== null) {
      if (performance.now() > deadline) throw new Error(`filling ${url.split('?')[0]}: ${writer.closed}`)
      writer = await writeAll(url, parts).catch((error: Error) => ({ socket: null, closed: error.message }))
    }
    if ((await stateSize(url)) >= bytes * 0.9) break
    await sleep(writer.closed === null ? 200 : 1_000)
  }
  writer.socket?.close()
}

/** A socket that sent `parts`, and why it closed once it does. */
async function writeAll(url: string, parts: Uint8Array[]) {
  const writer: { socket: LeanWebSocket | null; closed: string | null } = { socket: null, closed: null }
  writer.socket = await openSocket(url, (code, reason) => {
    writer.closed = `closed ${code} ${reason}`
  })
  for (const part of parts) writer.socket.send(syncUpdate(part))
  return writer
}

/** The size of the room's whole state, as a new reader is sent it (0: not sent within 30 s). */
function stateSize(url: string): Promise<number> {
  return new Promise<number>((resolve) => {
    const timer = setTimeout(() => {
      socket.terminate()
      resolve(0)
    }, 30_000)
    const socket: LeanWebSocket = new LeanWebSocket(url, {
      open: () => socket.send(syncStep1(Y.encodeStateVector(new Y.Doc()))),
      message: (data) => {
        const frame = readFrame(data)
        if (frame.type !== 'sync' || frame.kind !== SYNC_STEP2) return
        clearTimeout(timer)
        socket.close()
        resolve(frame.payload.length)
      },
      refused: () => resolve(0),
      close: () => resolve(0),
    })
  })
}

/** The HTTP status an upgrade to `url` is refused with, or `open` if it is taken. */
function refusedStatus(url: string): Promise<string> {
  return new Promise((resolve) => {
    const socket: LeanWebSocket = new LeanWebSocket(url, {
      open: () => {
        socket.terminate()
        resolve('open (not refused)')
      },
      message: () => {},
      refused: (status, reason) => resolve(`refused ${status} ${reason}`),
      close: () => {},
    })
  })
}

function openSocket(
  url: string,
  closed: (code: number, reason: string) => void = () => {},
): Promise<LeanWebSocket> {
  return new Promise((resolve, reject) => {
    const socket: LeanWebSocket = new LeanWebSocket(url, {
      open: () => resolve(socket),
      message: () => {},
      refused: (status, reason) => reject(new Error(`refused: ${status} ${reason}`)),
      close: closed,
    })
  })
}

/** The server's V8 heap (used, total) and external memory by second, in MiB, from its /metrics. */
function memorySplit(httpUrl: string) {
  const names = [
    'nodejs_heap_size_used_bytes',
    'nodejs_heap_size_total_bytes',
    'nodejs_external_memory_bytes',
  ]
  const seconds: number[][] = []
  const timer = setInterval(() => {
    fetch(`${httpUrl}/metrics`)
      .then((response) => response.text())
      .then((text) => {
        const mib = (name: string) => (metric(text, name) ?? 0) / 2 ** 20
        seconds.push(names.map((name) => Math.round(mib(name))))
      })
      .catch(() => {}) // a second without a reading
  }, 1_000)
  return {
    stop(): string[] {
      clearInterval(timer)
      return names.map((name, i) => `${name} by second (MiB): ${seconds.map((row) => row[i]).join(' ')}`)
    },
  }
}

/** Samples a process's resident memory every 100 ms (Linux). */
function rssSampler(pid: number) {
  const status = `/proc/${pid}/status`
  const read = (field: string) => {
    try {
      return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(status, 'utf8'))?.[1] ?? 0) / 1024
    } catch {
      return 0
    }
  }
  let peak = 0
  const started = performance.now()
  const seconds: number[] = []
  const timer = setInterval(() => {
    const now = read('VmRSS')
    const second = Math.floor((performance.now() - started) / 1000)
    seconds[second] = Math.max(seconds[second] ?? 0, now)
    peak = Math.max(peak, read('VmHWM'), now)
  }, 100)
  return {
    now: () => read('VmRSS'),
    peak: () => Math.max(peak, read('VmHWM')),
    exited: () => !existsSync(status),
    bySecond: () => [...seconds].map((mib) => (mib === undefined ? '-' : mib.toFixed(0))),
    stop: () => clearInterval(timer),
  }
}

import { setTimeout as sleep } from 'node:timers/promises'
import type { Histogram } from 'hdr-histogram-js'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { newHistogram, recordMs } from '../measurement/histogram.js'
import { EditEncoder } from '../virtual-users/edit-encoder.js'
import { LeanWebSocket } from '../virtual-users/lean-websocket.js'
import { isEditRecord, LOG } from '../virtual-users/records.js'
import { MESSAGE_AWARENESS, readFrame, SYNC_STEP1, syncStep1, syncUpdate } from '../virtual-users/wire.js'

/** The clients of `npm run bench:attack`: each attack, and the bystanders that time their edits. */

/** A running set of sockets; `stop` closes them and resolves once every one is closed. */
export interface Running {
  stop(): Promise<void>
}

/** Close codes the attacker's sockets were closed with, and how often. */
export class CloseTally {
  readonly counts = new Map<number, number>()

  add(code: number): void {
    this.counts.set(code, (this.counts.get(code) ?? 0) + 1)
  }

  toString(): string {
    const entries = [...this.counts].sort(([a], [b]) => a - b)
    return entries.length === 0 ? 'none' : entries.map(([code, n]) => `${code} × ${n}`).join(', ')
  }
}

/** How long stopped bystanders wait for their last edits. */
const DRAIN_MS = 5_000
const EMPTY_STATE_VECTOR = new Uint8Array([0])
const RECONNECT_MS = 200

/** How `keepConnected`'s sockets read. */
export interface KeepOptions {
  /** False: never read what the server sends (it piles up in the server's buffers). */
  read?: boolean
  /** Each message read; `leave` closes this connection and opens the next at once, uncounted. */
  message?: (data: Uint8Array, leave: () => void) => void
}

/**
 * `count` sockets that each keep one connection open to `url`, opening a new one whenever the
 * server closes theirs, until stopped. `opened` runs on each new connection; what it returns
 * (a timer) is cleared when that connection ends.
 */
export function keepConnected(
  count: number,
  url: string,
  tally: CloseTally,
  opened: (socket: LeanWebSocket) => NodeJS.Timeout | undefined,
  { read = true, message }: KeepOptions = {},
): Running {
  let running = true
  const open = new Set<LeanWebSocket>()
  const ended = new Set<Promise<void>>()
  const connect = () => {
    let timer: NodeJS.Timeout | undefined
    let done: () => void = () => {}
    const end = new Promise<void>((resolve) => {
      done = resolve
    })
    ended.add(end)
    let leaving = false
    const leave = () => {
      leaving = true
      socket.close()
    }
    const finish = (code: number | null) => {
      if (timer) clearInterval(timer)
      open.delete(socket)
      ended.delete(end)
      done()
      if (code !== null && running && !leaving) tally.add(code) // not the closes `stop` or `leave` make
      if (running) setTimeout(connect, leaving ? 0 : RECONNECT_MS)
    }
    const socket: LeanWebSocket = new LeanWebSocket(url, {
      open: () => {
        if (!read) socket.stopReading()
        timer = opened(socket)
      },
      message: (data) => message?.(data, leave),
      refused: () => finish(null),
      close: (code) => finish(code),
    })
    open.add(socket)
  }
  for (let i = 0; i < count; i++) connect()
  return {
    stop: async () => {
      running = false
      for (const socket of open) socket.terminate()
      await Promise.all(ended)
    },
  }
}

/** Sockets that ask for the whole document `perSecond` times a second and never read the answers. */
export function nonReaders(count: number, url: string, perSecond: number, tally: CloseTally): Running {
  const request = syncStep1(EMPTY_STATE_VECTOR)
  return keepConnected(
    count,
    url,
    tally,
    (socket) => {
      socket.send(request)
      return setInterval(() => socket.send(request), 1000 / perSecond)
    },
    { read: false },
  )
}

/** Sockets that each ask for the whole document `burst` times at once, are closed for it (4002), and come back. */
export function syncFlooders(count: number, url: string, burst: number, tally: CloseTally): Running {
  const request = syncStep1(EMPTY_STATE_VECTOR)
  return keepConnected(count, url, tally, (socket) => {
    for (let i = 0; i < burst; i++) socket.send(request)
    return undefined
  })
}

/**
 * Sockets each holding `clients` presence states of `stateBytes` JSON bytes (the server's caps),
 * all renewed every `intervalMs`: the biggest presence the limits allow, broadcast to the room.
 */
export function presenceAtCaps(
  count: number,
  url: string,
  options: { clients: number; stateBytes: number; intervalMs: number },
  tally: CloseTally,
): Running {
  let nextClient = 1_000_000
  const filler = 'p'.repeat(options.stateBytes - '{"p":""}'.length)
  const state = `{"p":"${filler}"}`
  return keepConnected(count, url, tally, (socket) => {
    const ids = Array.from({ length: options.clients }, () => nextClient++)
    let clock = 0
    const renew = () => {
      clock++
      const update = encoding.createEncoder()
      encoding.writeVarUint(update, ids.length)
      for (const id of ids) {
        encoding.writeVarUint(update, id)
        encoding.writeVarUint(update, clock)
        encoding.writeVarString(update, state)
      }
      const frame = encoding.createEncoder()
      encoding.writeVarUint(frame, MESSAGE_AWARENESS)
      encoding.writeVarUint8Array(frame, encoding.toUint8Array(update))
      socket.send(encoding.toUint8Array(frame))
    }
    renew()
    return setInterval(renew, options.intervalMs)
  })
}

/**
 * A socket in each of `urls`' rooms that writes `update` (a document at the struct ceiling) once
 * connected and stays, keeping the room loaded; when closed, it comes back and writes it again.
 */
export function documentHolders(urls: string[], update: Uint8Array, tally: CloseTally): Running {
  return sendingOnEachConnection(urls, syncUpdate(update), tally)
}

/** A socket in each of `urls`' rooms that sends `frame` on every connection and comes back when closed. */
export function sendingOnEachConnection(urls: string[], frame: Uint8Array, tally: CloseTally): Running {
  const running = urls.map((url) =>
    keepConnected(1, url, tally, (socket) => {
      socket.send(frame)
      return undefined
    }),
  )
  return { stop: async () => void (await Promise.all(running.map((r) => r.stop()))) }
}

/** One big update sent on its own connection: how it ended. */
export interface UpdateOutcome {
  label: string
  bytes: number
  /** The close code (or the HTTP status of a refused upgrade), or null if the server kept the connection open (it took the update). */
  code: number | null
  reason: string
  /** False: the upgrade was refused (the server was not sent the update). */
  opened: boolean
  /** From the update's send to its outcome (0 when it was never sent). */
  seconds: number
}

/**
 * Sends `updates` one after another, each on a fresh connection to `url`, waiting for the server
 * to close it (a refusal) or `waitMs` (taken), until stopped; then starts over.
 */
export function updatesInARow(
  url: string,
  updates: { label: string; update: Uint8Array }[],
  waitMs: number,
  outcomes: UpdateOutcome[],
): Running {
  let running = true
  let current: LeanWebSocket | null = null
  const sendOne = ({ label, update }: { label: string; update: Uint8Array }) =>
    new Promise<void>((resolve) => {
      let sentAt = 0
      let timer: NodeJS.Timeout | undefined
      let settled = false
      const settle = (code: number | null, reason: string) => {
        if (settled) return // the close that terminating it makes
        settled = true
        clearTimeout(timer)
        if (running)
          outcomes.push({
            label,
            bytes: update.length,
            code,
            reason,
            opened: sentAt > 0,
            seconds: sentAt > 0 ? (performance.now() - sentAt) / 1000 : 0,
          })
        current = null
        socket.terminate()
        resolve()
      }
      const socket: LeanWebSocket = new LeanWebSocket(url, {
        open: () => {
          sentAt = performance.now()
          socket.send(syncUpdate(update))
          timer = setTimeout(() => settle(null, ''), waitMs)
        },
        message: () => {},
        refused: (status, reason) => settle(status, reason),
        close: (code, reason) => settle(code, reason),
      })
      current = socket
    })
  const done = (async () => {
    while (running) {
      for (const update of updates) {
        if (!running) break
        await sendOne(update)
      }
    }
  })()
  return {
    stop: async () => {
      running = false
      ;(current as LeanWebSocket | null)?.terminate()
      await done
    },
  }
}

/** Bystanders' edit round trips, by phase. */
export interface BystanderTimes {
  phase: 'quiet' | 'attack' | 'after'
  readonly histograms: Record<'quiet' | 'attack', Histogram>
  lost: number
}

/**
 * Pairs of users in rooms of their own: the writer appends a record every `intervalMs`, the
 * reader times its arrival (both on this process's clock). Each edit counts toward the phase it
 * was sent in.
 */
export async function bystanders(urls: string[], intervalMs: number): Promise<Running & BystanderTimes> {
  const times: BystanderTimes = {
    phase: 'quiet',
    histograms: { quiet: newHistogram(), attack: newHistogram() },
    lost: 0,
  }
  const pairs = await Promise.all(urls.map((url, index) => bystanderPair(url, index, intervalMs, times)))
  return Object.assign(times, {
    stop: async () => {
      const lost = await Promise.all(pairs.map((pair) => pair.stop()))
      times.lost = lost.reduce((sum, n) => sum + n, 0)
    },
  })
}

async function bystanderPair(url: string, index: number, intervalMs: number, times: BystanderTimes) {
  const sent: BystanderTimes['phase'][] = []
  let received = 0
  const open = (onMessage: (data: Buffer) => void) =>
    new Promise<LeanWebSocket>((resolve, reject) => {
      const socket: LeanWebSocket = new LeanWebSocket(url, {
        open: () => resolve(socket),
        message: onMessage,
        refused: (status, reason) => reject(new Error(`bystander refused: ${status} ${reason}`)),
        close: () => {},
      })
    })
  // The reader applies what it is sent and times each record by its own sequence number: frames
  // are not edits one to one (the server's own writes, such as author bindings, arrive too).
  const replica = new Y.Doc()
  replica.getArray<unknown>(LOG).observe((event) => {
    for (const item of event.changes.added)
      for (const record of item.content.getContent()) {
        if (!isEditRecord(record) || record.u !== index) continue
        received++
        const phase = sent[record.s - 1]
        if (phase && phase !== 'after') recordMs(times.histograms[phase], performance.now() - record.t)
      }
  })
  const reader = await open((data) => {
    const frame = readFrame(data)
    if (frame.type === 'sync' && frame.kind !== SYNC_STEP1) Y.applyUpdate(replica, frame.payload)
  })
  const writer = await open(() => {})
  const encoder = new EditEncoder(2_000_000 + index, 'append')
  let sequence = 0
  const timer = setInterval(() => {
    sent.push(times.phase)
    const record = { u: index, s: ++sequence, t: performance.now(), x: sequence, y: index }
    writer.send(syncUpdate(encoder.encode(record)))
  }, intervalMs)
  return {
    /** Stops writing, waits a little for what is under way, and resolves with the edits that never arrived. */
    stop: async () => {
      clearInterval(timer)
      const until = performance.now() + DRAIN_MS
      while (received < sent.length && performance.now() < until) await sleep(50)
      writer.close()
      reader.close()
      return sent.length - received
    },
  }
}

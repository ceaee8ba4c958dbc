import { MESSAGE_SYNC_STATUS, SYNC_STATUS_PARAM } from '@symphony/client/wire'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import WebSocket from 'ws'
import { WebsocketProvider } from 'y-websocket'
import * as Y from 'yjs'
import type { Ledger, SessionEnd } from './ledger.js'

// y-websocket's provider adds a process 'exit' listener per instance in Node: dozens are expected.
process.setMaxListeners(0)

/** The shared array every writer pushes its edit ids to. */
export const EDITS = 'edits'

/** How a session types. */
export interface TypingSettings {
  /** How long a session types when its edits are answered promptly. */
  typingMs: number
  editIntervalMs: number
  /** While answers are held back a session keeps typing, up to this many edits. */
  maxEdits: number
  /** How long a session may take to connect and sync before it is given up (nothing edited yet). */
  connectTimeoutMs: number
  /** How long a request may wait for its answer; longer than the Redis client's retries. */
  ackTimeoutMs: number
}

export interface WritingSessionOptions extends TypingSettings {
  /** `ws://host:port` of the server. */
  url: string
  room: string
  /** Unique in the run; prefixes the session's edit ids. */
  name: string
  ledger: Ledger
  /** Aborting abandons the session. */
  signal: AbortSignal
  /** The session's token, for a cluster with auth on. */
  token?: string
}

/**
 * One session on a fresh document and a real y-websocket provider, typing as a user does: an edit
 * with a unique id every `editIntervalMs`, and a sync-status request (type 102) whenever none is
 * in flight, as `@symphony/client` asks. An answer acknowledges every edit made before its request.
 * The session ends once it has typed its share and everything is answered; a closed socket, a
 * request unanswered for `ackTimeoutMs` or the signal abandon it. Either way the provider is
 * destroyed at once, never reconnected: nothing the session made is ever sent again, so what the
 * server acknowledged has to be found on the servers.
 */
export function writeSession(options: WritingSessionOptions): Promise<SessionEnd> {
  const { url, room, name, ledger, signal, token } = options
  const startedAt = performance.now()
  const doc = new Y.Doc()
  const provider = new WebsocketProvider(url, room, doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    params: { [SYNC_STATUS_PARAM]: '1', ...(token ? { token } : {}) },
    disableBc: true,
  })
  const ids: string[] = []
  /** When each of `ids` was sent. */
  const sentAt: number[] = []
  let acked = 0
  let inFlight: number | null = null
  let announced = false
  let typingUntil: number | null = null
  let typing: NodeJS.Timeout | null = null
  let waiting: NodeJS.Timeout | null = null
  let done = false

  return new Promise<SessionEnd>((resolve) => {
    const finish = (answered: boolean) => {
      if (done) return
      done = true
      if (typing) clearInterval(typing)
      if (waiting) clearTimeout(waiting)
      signal.removeEventListener('abort', abandon)
      provider.destroy()
      doc.destroy()
      resolve(answered ? 'answered' : ids.length > 0 ? 'abandoned' : 'unstarted')
    }
    const abandon = () => finish(false)
    waiting = setTimeout(abandon, options.connectTimeoutMs)

    const ask = () => {
      const ws = provider.ws
      if (inFlight !== null || acked >= ids.length || !ws) return
      inFlight = ids.length
      const request = encoding.createEncoder()
      encoding.writeVarUint(request, MESSAGE_SYNC_STATUS)
      encoding.writeVarUint8Array(request, versionPayload(inFlight))
      ws.send(encoding.toUint8Array(request))
      if (waiting) clearTimeout(waiting)
      waiting = setTimeout(abandon, options.ackTimeoutMs)
    }
    const type = () => {
      const unanswered = acked < ids.length
      const keepTyping = performance.now() < (typingUntil ?? 0) || unanswered
      if (!keepTyping || ids.length >= options.maxEdits) {
        if (typing) clearInterval(typing)
        typing = null
        if (!unanswered) finish(true)
        return
      }
      const id = `${name}.${ids.length}`
      ids.push(id)
      ledger.made(id, room, startedAt)
      doc.getArray<string>(EDITS).push([id]) // the provider sends the update before we ask
      sentAt.push(performance.now())
      ask()
    }
    const start = () => {
      if (typingUntil !== null || !announced || !provider.synced) return
      typingUntil = performance.now() + options.typingMs
      if (waiting) clearTimeout(waiting)
      waiting = null
      type()
      typing = setInterval(type, options.editIntervalMs)
    }

    provider.messageHandlers[MESSAGE_SYNC_STATUS] = (_encoder, decoder) => {
      const payload = decoding.readVarUint8Array(decoder)
      if (payload.length === 0) {
        announced = true
        start()
        return
      }
      const version = decoding.readVarUint(decoding.createDecoder(payload))
      if (version !== inFlight) return
      inFlight = null
      if (waiting) clearTimeout(waiting)
      waiting = null
      const answered = { ids: ids.slice(acked, version), newestSentAt: sentAt[version - 1] ?? 0 }
      ledger.acknowledged({ url, room, at: performance.now(), ...answered })
      acked = version
      if (acked < ids.length) ask()
      else if (!typing) finish(true)
    }
    provider.on('sync', (synced: boolean) => {
      if (synced) start()
    })
    // Never let y-websocket reconnect: a reconnection would send the session's edits again.
    provider.on('connection-close', abandon)
    signal.addEventListener('abort', abandon)
    if (signal.aborted) abandon()
  })
}

function versionPayload(version: number): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, version)
  return encoding.toUint8Array(encoder)
}

import { MessageType, SyncType } from '@symphony/client/wire'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'

/**
 * The y-websocket wire format, written by hand so a light virtual user reads only the one or two
 * varints it needs from each frame instead of decoding everything.
 */
export const MESSAGE_SYNC = MessageType.Sync
export const MESSAGE_AWARENESS = MessageType.Awareness
export const SYNC_STEP1 = SyncType.Step1
export const SYNC_STEP2 = SyncType.Step2
export const SYNC_UPDATE = SyncType.Update

export function syncStep1(stateVector: Uint8Array): Uint8Array {
  return syncMessage(SYNC_STEP1, stateVector)
}

export function syncStep2(update: Uint8Array): Uint8Array {
  return syncMessage(SYNC_STEP2, update)
}

export function syncUpdate(update: Uint8Array): Uint8Array {
  return syncMessage(SYNC_UPDATE, update)
}

function syncMessage(kind: number, payload: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, MESSAGE_SYNC)
  encoding.writeVarUint(encoder, kind)
  encoding.writeVarUint8Array(encoder, payload)
  return encoding.toUint8Array(encoder)
}

/** One awareness entry: a client's whole presence state at `clock` (null: the client left). */
export interface AwarenessEntry {
  clientId: number
  clock: number
  state: unknown
}

export function awarenessMessage(entry: AwarenessEntry): Uint8Array {
  const update = encoding.createEncoder()
  encoding.writeVarUint(update, 1)
  encoding.writeVarUint(update, entry.clientId)
  encoding.writeVarUint(update, entry.clock)
  encoding.writeVarString(update, JSON.stringify(entry.state))
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, MESSAGE_AWARENESS)
  encoding.writeVarUint8Array(encoder, encoding.toUint8Array(update))
  return encoding.toUint8Array(encoder)
}

/** A frame split into what a client acts on; `payload` is the update, state vector or awareness update. */
export type Frame =
  | { type: 'sync'; kind: number; payload: Uint8Array }
  | { type: 'awareness'; payload: Uint8Array }
  | { type: 'other' }

export function readFrame(data: Uint8Array): Frame {
  const decoder = decoding.createDecoder(data)
  const type = decoding.readVarUint(decoder)
  if (type === MESSAGE_SYNC) {
    const kind = decoding.readVarUint(decoder)
    return { type: 'sync', kind, payload: decoding.readVarUint8Array(decoder) }
  }
  if (type === MESSAGE_AWARENESS) return { type: 'awareness', payload: decoding.readVarUint8Array(decoder) }
  return { type: 'other' }
}

export function readAwarenessUpdate(payload: Uint8Array): AwarenessEntry[] {
  const decoder = decoding.createDecoder(payload)
  const entries: AwarenessEntry[] = []
  const count = decoding.readVarUint(decoder)
  for (let i = 0; i < count; i++) {
    const clientId = decoding.readVarUint(decoder)
    const clock = decoding.readVarUint(decoder)
    entries.push({ clientId, clock, state: JSON.parse(decoding.readVarString(decoder)) })
  }
  return entries
}

/** The servers' framings: y-websocket's plain messages, or Hocuspocus's (each led by the document's name). */
export type Protocol = 'y-websocket' | 'hocuspocus'
export const PROTOCOLS: readonly Protocol[] = ['y-websocket', 'hocuspocus']

/** Turns y-websocket messages into a server's framing and back, for one room. */
export interface Framing {
  /** What to send first, once the socket is open. */
  greeting: Uint8Array[]
  wrap(message: Uint8Array): Uint8Array
  /** The y-websocket message inside a received frame. */
  unwrap(frame: Uint8Array): Uint8Array
}

const PLAIN: Framing = { greeting: [], wrap: (message) => message, unwrap: (frame) => frame }
const HOCUSPOCUS_AUTH = 2
const HOCUSPOCUS_SYNC_REPLY = 4

export function framingFor(protocol: Protocol, room: string): Framing {
  if (protocol === 'y-websocket') return PLAIN
  const nameEncoder = encoding.createEncoder()
  encoding.writeVarString(nameEncoder, room)
  const name = encoding.toUint8Array(nameEncoder)
  const wrap = (message: Uint8Array) => {
    const framed = new Uint8Array(name.length + message.length)
    framed.set(name)
    framed.set(message, name.length)
    return framed
  }
  // Hocuspocus holds every message until an Auth message (token type 0, an empty token here).
  const auth = encoding.createEncoder()
  encoding.writeVarUint(auth, HOCUSPOCUS_AUTH)
  encoding.writeVarUint(auth, 0)
  encoding.writeVarString(auth, '')
  return {
    greeting: [wrap(encoding.toUint8Array(auth))],
    wrap,
    unwrap(frame) {
      const decoder = decoding.createDecoder(frame)
      decoding.readVarString(decoder)
      const message = frame.subarray(decoder.pos)
      // Its answer to a sync step 1 is a sync message under a type of its own.
      if (message[0] === HOCUSPOCUS_SYNC_REPLY) message[0] = MESSAGE_SYNC
      return message
    },
  }
}

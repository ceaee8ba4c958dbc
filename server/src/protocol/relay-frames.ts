import { ProtocolError } from '../errors.js'

/**
 * The messages of a relay link: one WebSocket from a server that has clients of rooms another
 * server owns (the edge) to that owner's internal port, carrying every such client's session.
 * Each message is a kind byte, the session's number on its link (u32 LE), then its body:
 *
 * - `open` (edge → owner): the session's JSON (`RelayedSession`): the room and who the client is,
 *   as the edge checked its token, so the owner applies every check it applies to its own clients.
 * - `frame` (both ways): one y-websocket frame, as the client sent it or is to receive it.
 * - `leave` (edge → owner): the client's socket closed.
 * - `close` (owner → edge): close the client's socket with this code (u16 LE) and reason (UTF-8).
 * - `fanout` (owner → edge): one frame for several sessions of the link (a room's broadcast): the
 *   header's number is their count, then each session's number (u32 LE), then the frame. An
 *   update reaches an edge once, whatever the number of its clients in the room.
 *
 * Hand-written rather than a general encoding: a frame's bytes are the hot path, copied once into
 * the message and nowhere else.
 */
export type RelayMessage =
  | { kind: 'open'; session: number; opened: RelayedSession }
  | { kind: 'frame'; session: number; frame: Uint8Array }
  | { kind: 'leave'; session: number }
  | { kind: 'close'; session: number; code: number; reason: string }
  | { kind: 'fanout'; sessions: number[]; frame: Uint8Array }

/** What the owner needs to serve a client that connected to another server. */
export interface RelayedSession {
  room: string
  /** The connection's id, given by the edge (unique across servers and restarts). */
  id: string
  identity: {
    userId: string
    name: string | null
    info: Record<string, unknown> | null
    access: 'rw' | 'ro'
    expiresAt: number | null
  }
  heldBy: string
  pacedAs: string
  capabilities: string[]
  incarnation: number | 'none' | null
}

/**
 * The largest relay message a link takes: a client frame whole, plus what a message adds to it
 * (its header, a fanout's session numbers, an open's JSON), generously.
 */
export function relayPayloadLimit(maxMessageBytes: number): number {
  return maxMessageBytes + 64 * 1024
}

const KINDS = ['open', 'frame', 'leave', 'close', 'fanout'] as const
const HEADER_BYTES = 5

function header(kind: RelayMessage['kind'], session: number, bodyBytes: number): Buffer {
  const bytes = Buffer.allocUnsafe(HEADER_BYTES + bodyBytes)
  bytes.writeUInt8(KINDS.indexOf(kind), 0)
  bytes.writeUInt32LE(session, 1)
  return bytes
}

export function encodeRelayMessage(message: RelayMessage): Buffer {
  switch (message.kind) {
    case 'open': {
      const body = Buffer.from(JSON.stringify(message.opened))
      const bytes = header('open', message.session, body.length)
      body.copy(bytes, HEADER_BYTES)
      return bytes
    }
    case 'frame': {
      const bytes = header('frame', message.session, message.frame.length)
      bytes.set(message.frame, HEADER_BYTES)
      return bytes
    }
    case 'leave':
      return header('leave', message.session, 0)
    case 'close': {
      const reason = Buffer.from(message.reason)
      const bytes = header('close', message.session, 2 + reason.length)
      bytes.writeUInt16LE(message.code, HEADER_BYTES)
      reason.copy(bytes, HEADER_BYTES + 2)
      return bytes
    }
    case 'fanout': {
      const { sessions, frame } = message
      const bytes = header('fanout', sessions.length, 4 * sessions.length + frame.length)
      for (const [index, session] of sessions.entries())
        bytes.writeUInt32LE(session, HEADER_BYTES + 4 * index)
      bytes.set(frame, HEADER_BYTES + 4 * sessions.length)
      return bytes
    }
  }
}

/** Reads a message; a frame's bytes are a view of `bytes`. Throws `ProtocolError` for anything else. */
export function decodeRelayMessage(bytes: Uint8Array): RelayMessage {
  if (bytes.length < HEADER_BYTES) throw new ProtocolError('a relay message shorter than its header')
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const kind = KINDS[buffer.readUInt8(0)]
  const session = buffer.readUInt32LE(1)
  const body = buffer.subarray(HEADER_BYTES)
  switch (kind) {
    case 'open':
      return { kind, session, opened: JSON.parse(body.toString()) as RelayedSession }
    case 'frame':
      return { kind, session, frame: new Uint8Array(body.buffer, body.byteOffset, body.byteLength) }
    case 'leave':
      return { kind, session }
    case 'close':
      if (body.length < 2) throw new ProtocolError('a relay close without its code')
      return { kind, session, code: body.readUInt16LE(0), reason: body.subarray(2).toString() }
    case 'fanout': {
      // `session` is the count here: each number takes 4 bytes of the body.
      if (body.length < 4 * session) throw new ProtocolError('a relay fanout shorter than its sessions')
      const sessions = Array.from({ length: session }, (_, index) => body.readUInt32LE(4 * index))
      const frame = body.subarray(4 * session)
      return { kind, sessions, frame: new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength) }
    }
    default:
      throw new ProtocolError(`unknown relay message kind ${buffer.readUInt8(0)}`)
  }
}

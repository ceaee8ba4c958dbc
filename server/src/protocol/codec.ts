import { isUtf8 } from 'node:buffer'
import {
  type AppReply,
  decodeEventSender,
  type EventSender,
  encodeEventSender,
  MAX_SYNC_STATUS_PAYLOAD,
  MessageType,
  SyncType,
} from '@symphony/client/wire'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { MessageTooBigError, ProtocolError } from '../errors.js'
import { isJsonNull, jsonTextProblem } from './json-text.js'
import { MAX_JSON_DEPTH } from './update-scan.js'
import type { ValueTally } from './value-cost.js'
import { varUintSize, writeVarUint } from './var-uint.js'

const AUTH_PERMISSION_DENIED = 0

/**
 * A decoded frame. Payloads are views into the received bytes, never copies, so a frame can be
 * applied and forwarded as the very bytes that arrived.
 */
export type Message =
  | { kind: 'sync-step1'; stateVector: Uint8Array }
  | { kind: 'sync-step2'; update: Uint8Array }
  | { kind: 'update'; update: Uint8Array }
  | { kind: 'awareness'; update: Uint8Array }
  | { kind: 'query-awareness' }
  | { kind: 'auth' }
  | { kind: 'sync-status'; payload: Uint8Array }
  /** JSON text, checked by `checkBroadcast` before it goes anywhere. */
  | { kind: 'broadcast'; payload: Uint8Array }
  /** An app message (`MESSAGE_APP`): JSON text of an `AppRequest`, checked like a broadcast event. */
  | { kind: 'app'; payload: Uint8Array }

/**
 * Decodes one binary frame; throws `ProtocolError` on anything that is not exactly one message.
 * A peer's broadcast event carries its sender after the payload (`encodeRelayedEvent`); a client's
 * never does, so a client cannot name one.
 */
export function decodeMessage(frame: Uint8Array, from: 'client' | 'peer' = 'client'): Message {
  const decoder = decoding.createDecoder(frame)
  const message = readMessage(decoder)
  if (message.kind === 'broadcast' && from === 'peer') readEventSender(decoder)
  if (decoding.hasContent(decoder)) throw new ProtocolError('trailing bytes after the message')
  return message
}

function readEventSender(decoder: decoding.Decoder): EventSender {
  let sender: EventSender | null = null
  try {
    sender = decodeEventSender(decoding.readVarString(decoder))
  } catch {}
  if (!sender) throw new ProtocolError('a relayed broadcast event without its sender')
  return sender
}

function readMessage(decoder: decoding.Decoder): Message {
  try {
    const type = decoding.readVarUint(decoder)
    switch (type) {
      case MessageType.Sync:
        return readSync(decoder)
      case MessageType.Awareness:
        return { kind: 'awareness', update: decoding.readVarUint8Array(decoder) }
      case MessageType.QueryAwareness:
        return { kind: 'query-awareness' }
      case MessageType.SyncStatus: {
        const payload = decoding.readVarUint8Array(decoder)
        if (payload.length > MAX_SYNC_STATUS_PAYLOAD) {
          throw new ProtocolError(
            `a sync-status payload of ${payload.length} bytes (at most ${MAX_SYNC_STATUS_PAYLOAD})`,
          )
        }
        return { kind: 'sync-status', payload }
      }
      case MessageType.Broadcast:
        return { kind: 'broadcast', payload: decoding.readVarUint8Array(decoder) }
      case MessageType.App:
        return { kind: 'app', payload: decoding.readVarUint8Array(decoder) }
      case MessageType.Auth:
        // Clients have nothing to say to us on this channel; skip the body.
        decoder.pos = decoder.arr.length
        return { kind: 'auth' }
      default:
        throw new ProtocolError(`unknown message type ${type}`)
    }
  } catch (error) {
    if (error instanceof ProtocolError) throw error
    throw new ProtocolError(`malformed frame: ${(error as Error).message}`)
  }
}

function readSync(decoder: decoding.Decoder): Message {
  const syncType = decoding.readVarUint(decoder)
  const payload = decoding.readVarUint8Array(decoder)
  switch (syncType) {
    case SyncType.Step1:
      return { kind: 'sync-step1', stateVector: payload }
    case SyncType.Step2:
      return { kind: 'sync-step2', update: payload }
    case SyncType.Update:
      return { kind: 'update', update: payload }
    default:
      throw new ProtocolError(`unknown sync message type ${syncType}`)
  }
}

function encodeWith(write: (encoder: encoding.Encoder) => void): Uint8Array {
  const encoder = encoding.createEncoder()
  write(encoder)
  return encoding.toUint8Array(encoder)
}

function encodeSync(syncType: number, payload: Uint8Array): Uint8Array {
  return encodeWith((encoder) => {
    encoding.writeVarUint(encoder, MessageType.Sync)
    encoding.writeVarUint(encoder, syncType)
    encoding.writeVarUint8Array(encoder, payload)
  })
}

export const encodeSyncStep1 = (stateVector: Uint8Array) => encodeSync(SyncType.Step1, stateVector)
export const encodeSyncStep2 = (update: Uint8Array) => encodeSync(SyncType.Step2, update)
export const encodeUpdate = (update: Uint8Array) => encodeSync(SyncType.Update, update)

/** The server's answer to one app message (`MESSAGE_APP`). */
export function encodeAppReply(reply: AppReply): Uint8Array {
  return encodeWith((encoder) => {
    encoding.writeVarUint(encoder, MessageType.App)
    encoding.writeVarUint8Array(encoder, new TextEncoder().encode(JSON.stringify(reply)))
  })
}

export function encodeAwareness(update: Uint8Array): Uint8Array {
  return encodeWith((encoder) => {
    encoding.writeVarUint(encoder, MessageType.Awareness)
    encoding.writeVarUint8Array(encoder, update)
  })
}

/**
 * Refuses a broadcast event over `maxBytes` (`MessageTooBigError`) or that is not JSON in UTF-8,
 * nested too deep (`ProtocolError`): the same rules as a presence state. With `values`, also
 * counts what parsing it builds.
 */
export function checkBroadcast(payload: Uint8Array, maxBytes: number, values?: ValueTally): void {
  if (payload.length > maxBytes) {
    throw new MessageTooBigError(`a broadcast event of ${payload.length} bytes (at most ${maxBytes})`)
  }
  const problem = isUtf8(payload) ? jsonTextProblem(payload, MAX_JSON_DEPTH, values) : 'not UTF-8'
  if (problem) throw new ProtocolError(`a broadcast event that is ${problem}`)
}

/**
 * A client's broadcast event as the room relays it, to its clients and its peers: the payload
 * as it arrived, then who sent it, stamped here and never taken from the client.
 */
export function encodeRelayedEvent(payload: Uint8Array, sender: EventSender): Uint8Array {
  return encodeWith((encoder) => {
    encoding.writeVarUint(encoder, MessageType.Broadcast)
    encoding.writeVarUint8Array(encoder, payload)
    encoding.writeVarString(encoder, encodeEventSender(sender))
  })
}

/** The room's incarnation, for a client that asked (`?incarnation=`). */
export function encodeIncarnation(generation: number): Uint8Array {
  return encodeWith((encoder) => {
    encoding.writeVarUint(encoder, MessageType.Incarnation)
    encoding.writeVarUint(encoder, generation)
  })
}

/** A sync-status message: empty, the announcement; else the answer to a client's request. */
export function encodeSyncStatus(payload: Uint8Array): Uint8Array {
  return encodeWith((encoder) => {
    encoding.writeVarUint(encoder, MessageType.SyncStatus)
    encoding.writeVarUint8Array(encoder, payload)
  })
}

/** Tells a y-websocket client its write was refused (its provider logs the reason). */
export function encodePermissionDenied(reason: string): Uint8Array {
  return encodeWith((encoder) => {
    encoding.writeVarUint(encoder, MessageType.Auth)
    encoding.writeVarUint(encoder, AUTH_PERMISSION_DENIED)
    encoding.writeVarString(encoder, reason)
  })
}

/** One client's presence in an awareness update. */
export interface AwarenessEntry {
  clientId: number
  clock: number
  /** The state as the JSON text that arrived (a view, not a copy); null when the client left. */
  state: Uint8Array | null
}

/** No connection may speak for this many clients, and peers only forward what clients sent. */
const MAX_AWARENESS_ENTRIES = 64

/**
 * The entries of an awareness update, their JSON states checked but not parsed. Throws
 * `MessageTooBigError` for a state over `maxStateBytes`, and `ProtocolError` if the update is
 * malformed or a state is not JSON in UTF-8 (Node's y-websocket clients crash on anything else),
 * or is nested too deep (the next joiner's reader would overflow its stack). `checkStates` false
 * (a peer's update, which the server its client sent it to checked) skips the JSON and UTF-8
 * checks: they were half of what a peer's presence frame cost.
 */
export function decodeAwarenessUpdate(
  update: Uint8Array,
  maxStateBytes: number,
  checkStates = true,
): AwarenessEntry[] {
  const decoder = decoding.createDecoder(update)
  try {
    const count = decoding.readVarUint(decoder)
    if (count > MAX_AWARENESS_ENTRIES) throw new Error(`more than ${MAX_AWARENESS_ENTRIES} clients`)
    const entries: AwarenessEntry[] = []
    for (let i = 0; i < count; i++) {
      const clientId = decoding.readVarUint(decoder)
      const clock = decoding.readVarUint(decoder)
      const state = decoding.readVarUint8Array(decoder)
      if (state.length > maxStateBytes) {
        throw new MessageTooBigError(`a presence state of ${state.length} bytes (at most ${maxStateBytes})`)
      }
      if (checkStates) {
        if (!isUtf8(state)) throw new Error(`the state of client ${clientId} is not UTF-8`)
        const problem = jsonTextProblem(state, MAX_JSON_DEPTH)
        if (problem) throw new Error(`the state of client ${clientId} is ${problem}`)
      }
      entries.push({ clientId, clock, state: isJsonNull(state) ? null : state })
    }
    if (decoding.hasContent(decoder)) throw new Error('trailing bytes')
    return entries
  } catch (error) {
    if (error instanceof MessageTooBigError) throw error
    throw new ProtocolError(`malformed awareness update: ${(error as Error).message}`)
  }
}

/** An awareness message carrying `entries` (state null: the client left). */
export function encodeAwarenessEntries(entries: AwarenessEntry[]): Uint8Array {
  const update = encoding.createEncoder()
  encoding.writeVarUint(update, entries.length)
  for (const { clientId, clock, state } of entries) {
    encoding.writeVarUint(update, clientId)
    encoding.writeVarUint(update, clock)
    encoding.writeVarUint8Array(update, state ?? JSON_NULL)
  }
  return encodeAwareness(encoding.toUint8Array(update))
}

const JSON_NULL = new TextEncoder().encode('null')

/**
 * An awareness message of states kept as JSON texts of one byte per character (latin1), written
 * into one buffer of the exact size: lib0's encoder would grow and copy it twice, and this
 * message (everyone's presence, for each joiner) can hold megabytes.
 */
export function encodeAwarenessTexts(
  entries: { clientId: number; clock: number; text: string }[],
): Uint8Array {
  let updateBytes = varUintSize(entries.length)
  for (const { clientId, clock, text } of entries)
    updateBytes += varUintSize(clientId) + varUintSize(clock) + varUintSize(text.length) + text.length
  const frame = Buffer.allocUnsafe(
    varUintSize(MessageType.Awareness) + varUintSize(updateBytes) + updateBytes,
  )
  let at = writeVarUint(frame, 0, MessageType.Awareness)
  at = writeVarUint(frame, at, updateBytes)
  at = writeVarUint(frame, at, entries.length)
  for (const { clientId, clock, text } of entries) {
    at = writeVarUint(frame, at, clientId)
    at = writeVarUint(frame, at, clock)
    at = writeVarUint(frame, at, text.length)
    at += frame.write(text, at, 'latin1')
  }
  return frame
}

/**
 * A client's state vector, cut down to the clients `knows` accepts, after checking it names at most
 * `maxEntries` clients: Yjs decodes every entry into a map before it answers, so a crafted
 * vector of a million clients cost seconds per request. Entries for clients the room has never
 * seen change nothing in the answer. Throws `ProtocolError`.
 */
export function boundedStateVector(
  stateVector: Uint8Array,
  maxEntries: number,
  knows: (client: number) => boolean,
): Uint8Array {
  const decoder = decoding.createDecoder(stateVector)
  const kept: number[] = []
  let count: number
  try {
    count = decoding.readVarUint(decoder)
    if (count > maxEntries) {
      throw new ProtocolError(`a state vector of ${count} clients (this room allows ${maxEntries})`)
    }
    for (let i = 0; i < count; i++) {
      const client = decoding.readVarUint(decoder)
      const clock = decoding.readVarUint(decoder)
      if (knows(client)) kept.push(client, clock)
    }
  } catch (error) {
    if (error instanceof ProtocolError) throw error
    throw new ProtocolError(`malformed state vector: ${(error as Error).message}`)
  }
  if (kept.length === 2 * count) return stateVector
  return encodeWith((encoder) => {
    encoding.writeVarUint(encoder, kept.length / 2)
    for (const value of kept) encoding.writeVarUint(encoder, value)
  })
}

/** Whether a state vector names no client: its holder has nothing yet. */
export function isEmptyStateVector(stateVector: Uint8Array): boolean {
  return stateVector.length === 1 && stateVector[0] === 0
}

/** Whether a Yjs (v1) update carries no structs and no deletions, i.e. nothing worth forwarding. */
export function isEmptyUpdate(update: Uint8Array): boolean {
  return update.length === 2 && update[0] === 0 && update[1] === 0
}

/** Reached only for a message kind a dispatcher does not handle, which the compiler refuses (`never`). */
export function unhandledMessage(message: never): never {
  throw new Error(`unhandled message kind ${(message as Message).kind}`)
}

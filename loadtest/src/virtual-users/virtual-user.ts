import { roomPath } from '@symphony/client/wire'
import type * as Y from 'yjs'
import type { Measures } from '../measurement/measures.js'
import type { RoomObserver } from '../measurement/observer.js'
import type { EditRecord, PresenceRecord } from './records.js'
import type { Protocol } from './wire.js'

/** One simulated person in a room: a light protocol client or the real client library. */
export interface VirtualUser {
  /** This user's awareness client id. */
  readonly clientId: number
  /** Its replica: only its own edits for a light user, everything for an observer. */
  readonly doc: Y.Doc
  /** Resolves once synced (recording the connect + sync latency); rejects if the server refused. */
  connect(): Promise<void>
  edit(record: EditRecord): void
  setPresence(state: PresenceRecord): void
  close(): Promise<void>
}

export interface UserSetup {
  /** The server, e.g. ws://127.0.0.1:1234. */
  serverUrl: string
  room: string
  token: string | undefined
  edit: 'set' | 'append'
  measures: Measures
  /** Set for the room's observer, which applies everything it receives. */
  observer?: RoomObserver
  /** The server's framing; y-websocket's unless set. */
  protocol?: Protocol
  /** Apply everything received without measuring it (the convergence check's fresh client). */
  replica?: boolean
}

export function roomUrl(serverUrl: string, room: string, token: string | undefined): string {
  const url = `${serverUrl.replace(/\/+$/, '')}/${roomPath(room)}`
  return token ? `${url}?token=${encodeURIComponent(token)}` : url
}

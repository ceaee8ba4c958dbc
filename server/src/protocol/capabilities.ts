import { BROADCAST_PARAM, SYNC_STATUS_PARAM } from '@symphony/client/wire'

/**
 * Symphony's opt-in protocol extensions. A plain y-websocket provider declares none, so it never
 * receives a frame it would not understand.
 */
export type Capability = 'sync-status' | 'events'

/** The extensions one connection declared. */
export type Capabilities = ReadonlySet<Capability>

export const NO_CAPABILITIES: Capabilities = new Set()

/** The query parameter (`=1`) by which a client declares each extension; the compiler names one left out. */
const CAPABILITY_PARAMS = {
  /** The sync-status announcement, and answers to its requests. */
  'sync-status': SYNC_STATUS_PARAM,
  /** Broadcast events from the room's other clients. */
  events: BROADCAST_PARAM,
} as const satisfies Record<Capability, string>

/** The extensions a WebSocket URL's query declares. */
export function capabilitiesFrom(query: URLSearchParams): Capabilities {
  const declared = new Set<Capability>()
  for (const [capability, param] of Object.entries(CAPABILITY_PARAMS)) {
    if (query.get(param) === '1') declared.add(capability as Capability)
  }
  return declared
}

import type { ChangeOrigin } from './server-events.js'
import type { Writer } from './update-origin.js'

export const PEER_ORIGIN: ChangeOrigin = { kind: 'peer' }

/** The origin `document.changed` reports for an update of `writer`'s: its API origin, else its connection. */
export function changeOriginOf(writer: Writer): ChangeOrigin {
  if (writer.origin) return writer.origin
  const { userId, name } = writer.identity
  return { kind: 'client', connectionId: writer.id ?? '', userId, name }
}

import * as Y from 'yjs'
import { ProtocolError } from '../errors.js'

/** Deepest nesting of JSON values in an update or a presence state. */
export const MAX_JSON_DEPTH = 64
/** Clients whose structs an update may leave waiting for missing dependencies. */
export const MAX_WAITING_CLIENTS_PER_UPDATE = 64
/** Clients a room may have waiting for missing dependencies at once. */
export const MAX_WAITING_CLIENTS_PER_ROOM = 1_000

const MAX_CLOCK = Number.MAX_SAFE_INTEGER

/**
 * Checks an update from a client before Yjs applies it. Yjs trusts its input: a few crafted
 * bytes can leave a document that no longer encodes (zero lengths, clocks past 2^53, deeply
 * nested JSON) or stop running its transaction cleanups for good, and gaps across many clients
 * cost quadratic time. Such updates are refused whole, before anything is applied. Throws
 * `ProtocolError`.
 */
export function checkUpdate(update: Uint8Array, doc: Y.Doc): void {
  let decoded: ReturnType<typeof Y.decodeUpdate>
  try {
    decoded = Y.decodeUpdate(update) // lazily: a claimed struct count allocates nothing up front
  } catch (error) {
    throw new ProtocolError(`unreadable update: ${(error as Error).message}`)
  }
  const waiting = new Set<number>()
  for (const struct of decoded.structs) {
    const { client, clock } = struct.id
    checkRange(client, clock, struct.length, 'struct')
    if (clock > Y.getState(doc.store, client)) waiting.add(client)
    if (struct instanceof Y.Item) checkItem(struct)
  }
  for (const [client, deletions] of decoded.ds.clients) {
    for (const deletion of deletions) checkRange(client, deletion.clock, deletion.len, 'deletion')
  }
  if (waiting.size > MAX_WAITING_CLIENTS_PER_UPDATE) {
    throw new ProtocolError(`update waits on ${waiting.size} clients' missing updates`)
  }
  const alreadyWaiting = doc.store.pendingStructs?.missing.size ?? 0
  if (waiting.size > 0 && alreadyWaiting + waiting.size > MAX_WAITING_CLIENTS_PER_ROOM) {
    throw new ProtocolError('too many updates in this room wait for missing dependencies')
  }
}

function checkRange(client: number, clock: number, length: number, what: string): void {
  if (!(length >= 1) || !(client >= 0) || client > MAX_CLOCK || !(clock >= 0) || clock + length > MAX_CLOCK) {
    throw new ProtocolError(
      `${what} with an impossible range (client ${client}, clock ${clock}, length ${length})`,
    )
  }
}

function checkItem(item: Y.Item): void {
  for (const id of [item.origin, item.rightOrigin]) if (id) checkRange(id.client, id.clock, 1, 'reference')
  const content = item.content
  if (content instanceof Y.ContentDoc) throw new ProtocolError('subdocuments are not supported')
  if (content instanceof Y.ContentAny || content instanceof Y.ContentJSON) {
    for (const value of content.arr) checkDepth(value)
  } else if (content instanceof Y.ContentEmbed) {
    checkDepth(content.embed)
  } else if (content instanceof Y.ContentFormat) {
    checkDepth(content.value)
  }
}

/** Nesting deeper than MAX_JSON_DEPTH overflows the stack when the document is encoded again. */
function checkDepth(value: unknown): void {
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number]
    if (current === null || typeof current !== 'object' || current instanceof Uint8Array) continue
    if (depth > MAX_JSON_DEPTH) throw new ProtocolError(`values nested deeper than ${MAX_JSON_DEPTH} levels`)
    for (const child of Object.values(current)) stack.push([child, depth + 1])
  }
}

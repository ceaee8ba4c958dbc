import * as Y from 'yjs'
import { PendingLimitError } from '../errors.js'
import { type ScannedUpdate, scanUpdate } from './update-scan.js'

/**
 * What a room may hold waiting for missing dependencies. Yjs keeps structs whose dependencies have
 * not arrived, and deletions of items it does not have yet, and works on them again later:
 * waiting structs are re-merged whenever more arrive, waiting deletions are re-read on every
 * update the room applies. Unbounded, one client makes every later edit in the room slow.
 */
export interface WaitingBudget {
  /** Encoded bytes of waiting structs. */
  maxStructBytes: number
  /** Encoded bytes of waiting deletions (each costs on every later update: keep this small). */
  maxDeleteBytes: number
  /** Clients whose structs may wait at once. */
  maxClients: number
}

/** A deleted range held by Yjs takes at most this many bytes in its (v2) encoding. */
const BYTES_PER_WAITING_DELETION = 4

/**
 * Checks an update from a client before Yjs applies it. Yjs trusts its input: a few crafted bytes
 * can leave a document that no longer encodes, and waiting work slows the room for good. The
 * update is read once (`scanUpdate` refuses what is malformed), then integrated on paper against
 * the document: what would still wait for missing dependencies afterwards, counted with what the
 * room holds waiting already, must fit the budget. Every update real Yjs produces integrates or
 * waits within it; an update is refused whole, before anything is applied. Throws `ProtocolError`
 * (malformed) or `PendingLimitError` (over the budget).
 */
export function checkUpdate(update: Uint8Array, doc: Y.Doc, budget: WaitingBudget): void {
  const scanned = scanUpdate(update)
  const waiting = whatWouldWait(scanned, doc)
  const pending = doc.store.pendingStructs
  if (waiting.structBytes > 0) {
    const held = pending?.update.length ?? 0
    if (held + waiting.structBytes > budget.maxStructBytes) {
      throw new PendingLimitError(
        `${waiting.structBytes} bytes of the update wait for updates this room never received, and ` +
          `the room holds ${held} waiting already (at most ${budget.maxStructBytes})`,
      )
    }
    const clients = new Set([...(pending?.missing.keys() ?? []), ...waiting.clients])
    if (clients.size > budget.maxClients) {
      throw new PendingLimitError(
        `updates of ${clients.size} clients would wait (at most ${budget.maxClients})`,
      )
    }
  }
  if (waiting.deletions > 0) {
    const held = doc.store.pendingDs?.length ?? 0
    const added = waiting.deletions * BYTES_PER_WAITING_DELETION
    if (held + added > budget.maxDeleteBytes) {
      throw new PendingLimitError(
        `${waiting.deletions} deletions of the update are of items this room does not have, and ` +
          `the room holds ${held} bytes of such deletions already (at most ${budget.maxDeleteBytes})`,
      )
    }
  }
}

interface Waiting {
  structBytes: number
  clients: Set<number>
  /** Deleted ranges (or parts) whose items would not exist. */
  deletions: number
}

/**
 * What of the update would wait after Yjs integrated the rest. A struct integrates once its
 * client's history reaches its clock and every other client's id it refers to exists: in the
 * document, or in the update's structs that integrate. This is Yjs' own rule, run to a fixpoint
 * without building anything: each client's run advances as far as it can, and a client stopped
 * by another's missing id resumes when that client's run passes it.
 */
function whatWouldWait(update: ScannedUpdate, doc: Y.Doc): Waiting {
  const reached = new Map<number, number>()
  const reachedBy = (client: number) => reached.get(client) ?? Y.getState(doc.store, client)
  const next = new Map<number, number>() // client → index of its first struct not integrated
  const resumeWhen = new Map<number, { client: number; clock: number }[]>()
  const queue = [...update.structs.keys()]
  while (queue.length > 0) {
    const client = queue.pop() as number
    const run = update.structs.get(client) ?? []
    let index = next.get(client) ?? 0
    let clock = reachedBy(client)
    const from = clock
    for (; index < run.length; index++) {
      const struct = run[index] as (typeof run)[number]
      if (struct.clock + struct.length <= clock) continue // held already
      if (struct.clock > clock || struct.gap) break // a gap in the client's history
      const missing = firstMissing(struct.needs, reachedBy)
      if (missing) {
        const waiters = resumeWhen.get(missing.client) ?? []
        waiters.push({ client, clock: missing.clock })
        resumeWhen.set(missing.client, waiters)
        break
      }
      clock = struct.clock + struct.length
    }
    next.set(client, index)
    if (clock === from) continue
    reached.set(client, clock)
    const waiters = resumeWhen.get(client)
    if (!waiters) continue
    const stillWaiting = waiters.filter((waiter) => waiter.clock >= clock)
    for (const waiter of waiters) if (waiter.clock < clock) queue.push(waiter.client)
    resumeWhen.set(client, stillWaiting)
  }
  const waiting: Waiting = { structBytes: 0, clients: new Set(), deletions: 0 }
  for (const [client, run] of update.structs) {
    for (let index = next.get(client) ?? 0; index < run.length; index++) {
      const struct = run[index] as (typeof run)[number]
      if (struct.gap) continue
      waiting.structBytes += struct.bytes
      waiting.clients.add(client)
    }
  }
  for (const [client, ranges] of update.deletions) {
    const clock = reachedBy(client)
    for (let i = 0; i < ranges.length; i += 2) {
      if ((ranges[i] as number) + (ranges[i + 1] as number) > clock) waiting.deletions++
    }
  }
  return waiting
}

function firstMissing(
  needs: number[],
  reachedBy: (client: number) => number,
): { client: number; clock: number } | null {
  for (let i = 0; i < needs.length; i += 2) {
    const client = needs[i] as number
    const clock = needs[i + 1] as number
    if (clock >= reachedBy(client)) return { client, clock }
  }
  return null
}

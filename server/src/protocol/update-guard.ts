import * as Y from 'yjs'
import { DocumentTooLargeError, PendingLimitError } from '../errors.js'
import { firstEndingAfter, type ScannedUpdate, scanUpdate } from './update-scan.js'
import { structsAdded } from './update-structs.js'
import { varUintSize } from './var-uint.js'
import { clockOf, waitingDeletions, waitingStructs } from './yjs-internals.js'

/**
 * What a room may hold waiting for missing dependencies. Yjs keeps structs whose dependencies have
 * not arrived, and deletions of items it does not have yet, and works on them again later:
 * waiting structs are re-merged whenever more arrive, waiting deletions are re-read on every
 * update the room applies. Unbounded, one client makes every later edit in the room slow.
 */
export interface WaitingBudget {
  /** Encoded bytes of waiting structs. */
  maxPendingBytes: number
  /** Encoded bytes of waiting deletions (each costs on every later update: keep this small). */
  maxPendingDeleteBytes: number
  /** Clients whose structs may wait at once. */
  maxClients: number
}

/**
 * Checks an update from a client before Yjs applies it. Yjs trusts its input: a few crafted bytes
 * can leave a document that no longer encodes, and waiting work slows the room for good. The
 * update is read once (`scanUpdate` refuses what is malformed), then integrated on paper against
 * the document: what would still wait for missing dependencies afterwards, counted with what the
 * room holds waiting already, must fit the budget. Every update real Yjs produces integrates or
 * waits within it; an update is refused whole, before anything is applied. Throws `ProtocolError`
 * (malformed) or `PendingLimitError` (over the budget); returns what it read (`structsAdded` takes it).
 */
export function checkUpdate(update: Uint8Array, doc: Y.Doc, budget: WaitingBudget): ScannedUpdate {
  const scanned = scanUpdate(update)
  checkAgainst(scanned, roomStateOf(doc), budget)
  return scanned
}

/** What the guard needs to know of a room: how far each client's history reaches, and what it holds waiting. */
interface RoomState {
  /** The next clock the room expects from `client` (its entry in Yjs' state vector). */
  stateOf(client: number): number
  waitingStructBytes: number
  /** What the waiting structs wait for: client → the clock they need from it (Yjs' `missing`). */
  waitingFor: Iterable<[number, number]>
  /** The waiting structs as a v1 update (read only when an update may release some), or null. */
  waitingUpdate(): Uint8Array | null
  waitingDeleteBytes: number
}

/** A live document's state, read lazily: nothing is copied for an update that waits for nothing. */
function roomStateOf(doc: Y.Doc): RoomState {
  const pending = waitingStructs(doc)
  return {
    stateOf: (client) => clockOf(doc, client),
    waitingStructBytes: pending?.update.length ?? 0,
    waitingFor: pending?.missing ?? [],
    waitingUpdate: () => (pending ? Y.convertUpdateFormatV2ToV1(pending.update) : null),
    waitingDeleteBytes: waitingDeletions(doc)?.length ?? 0,
  }
}

/** A big update that integrates whole, as `checkWhole` found it. */
export interface WholeUpdate {
  /** Its structs in an order each can be integrated in: runs of a client's structs, as [client, from, to, ...]. */
  order: number[]
  /** The most structs (and clients) the room gains by it (`structsAdded`). */
  structs: number
}

/**
 * The check for an update applied in slices across turns (a big one): it may leave nothing
 * waiting at all, as Yjs would re-merge what waits with every later slice, may have no gap,
 * which keeps an update from being sliced, and may add at most `maxStructs` structs to the room.
 * Needs only the room's state vector, so a worker thread can run it. Throws `PendingLimitError`
 * or `DocumentTooLargeError`.
 */
export function checkWhole(
  scanned: ScannedUpdate,
  stateOf: (client: number) => number,
  maxStructs: number,
): WholeUpdate {
  const waiting = whatWouldWait(scanned, stateOf)
  const gap = [...scanned.structs.values()].some((run) => run.some((struct) => struct.gap))
  if (waiting.structBytes > 0 || waiting.deleteBytes > 0 || gap) {
    throw new PendingLimitError(
      'an update this big must integrate whole: it may not have gaps or leave anything waiting for updates the room never received',
    )
  }
  const structs = structsAdded(scanned, stateOf)
  if (structs > maxStructs) {
    throw new DocumentTooLargeError(
      `the update may add ${structs} structs to the document, which may gain at most ${maxStructs} more`,
    )
  }
  return { order: waiting.order, structs }
}

/**
 * An order the update's structs can be integrated in against a room whose history reaches
 * `stateOf`: what integrates (each struct after what it refers to), then what would wait.
 */
export function integrationOrder(scanned: ScannedUpdate, stateOf: (client: number) => number): number[] {
  return whatWouldWait(scanned, stateOf).order
}

/** `checkUpdate` on an update already scanned, against a room's state. */
function checkAgainst(scanned: ScannedUpdate, room: RoomState, budget: WaitingBudget): void {
  let waiting = whatWouldWait(scanned, room.stateOf)
  if (waiting.structBytes > 0) {
    let held = room.waitingStructBytes
    let heldClients = new Set<number>()
    let releases = false
    for (const [client, clock] of room.waitingFor) {
      heldClients.add(client)
      if (waiting.reached(client) > clock) releases = true
    }
    // An update that reaches what the room's waiting structs wait for makes Yjs retry them: what
    // stays waiting then is what waits when both are integrated together.
    const together = releases ? withWaiting(scanned, room) : null
    if (together) {
      waiting = { ...whatWouldWait(together, room.stateOf), deleteBytes: waiting.deleteBytes }
      held = 0
      heldClients = new Set()
    }
    if (held + waiting.structBytes > budget.maxPendingBytes) {
      throw new PendingLimitError(
        `${waiting.structBytes} bytes of the update wait for updates this room never received, and ` +
          `the room holds ${held} waiting already (at most ${budget.maxPendingBytes})`,
      )
    }
    const clients = new Set([...heldClients, ...waiting.clients])
    if (clients.size > budget.maxClients) {
      throw new PendingLimitError(
        `updates of ${clients.size} clients would wait (at most ${budget.maxClients})`,
      )
    }
  }
  if (waiting.deleteBytes > 0) {
    const held = room.waitingDeleteBytes
    if (held + waiting.deleteBytes > budget.maxPendingDeleteBytes) {
      throw new PendingLimitError(
        `${waiting.deleteBytes} bytes of the update's deletions are of items this room does not have, ` +
          `and the room holds ${held} bytes of such deletions already (at most ${budget.maxPendingDeleteBytes})`,
      )
    }
  }
}

/** The update's structs together with the room's waiting ones, or null if those are unknown. */
function withWaiting(update: ScannedUpdate, room: RoomState): ScannedUpdate | null {
  const waitingUpdate = room.waitingUpdate()
  if (!waitingUpdate) return null
  let held: ScannedUpdate
  try {
    held = scanUpdate(waitingUpdate)
  } catch {
    return null // Yjs wrote it; if it cannot be read, count it whole instead
  }
  const structs = new Map(update.structs)
  for (const [client, run] of held.structs) {
    const ours = structs.get(client)
    structs.set(client, ours ? [...ours, ...run].sort((a, b) => a.clock - b.clock) : run)
  }
  return { ...update, structs }
}

interface Waiting {
  structBytes: number
  clients: Set<number>
  /** Encoded size of the deleted ranges (or parts) whose items would not exist. */
  deleteBytes: number
  /** How far each client's history reaches once the update is applied. */
  reached(client: number): number
  /** The structs in the order they integrate, then those that would wait, as [client, from, to, ...]. */
  order: number[]
}

/**
 * What of the update would wait after Yjs integrated the rest. A struct integrates once its
 * client's history reaches its clock and every other client's id it refers to exists: in the
 * document, or in the update's structs that integrate. This is Yjs' own rule (`integrateStructs`:
 * a gap first, then missing references, even for a struct the room holds already), run to a
 * fixpoint without building anything. Each client's run advances as far as it can; a client
 * stopped by another's missing id waits on the struct of that other client's run that holds the
 * id, and resumes when the run passes it. Every struct is passed once and every wait registered
 * once, so the work is O(structs × log).
 */
function whatWouldWait(update: ScannedUpdate, stateOf: (client: number) => number): Waiting {
  const reached = new Map<number, number>()
  const reachedBy = (client: number) => reached.get(client) ?? stateOf(client)
  const next = new Map<number, number>() // client → index of its first struct not integrated
  // Blocking client → index of the struct in its run that holds the needed id → waiting clients.
  const waitersAt = new Map<number, Map<number, number[]>>()
  const queue = [...update.structs.keys()]
  const order: number[] = []
  while (queue.length > 0) {
    const client = queue.pop() as number
    const run = update.structs.get(client) ?? []
    const from = next.get(client) ?? 0
    let index = from
    let clock = reachedBy(client)
    for (; index < run.length; index++) {
      const struct = run[index] as (typeof run)[number]
      if (struct.gap) {
        if (struct.clock + struct.length <= clock) continue // a gap the room has filled
        break
      }
      if (struct.clock > clock) break // a gap in the client's history
      const missing = firstMissing(struct.needs, reachedBy)
      if (missing) {
        waitOn(update, waitersAt, missing, client)
        break
      }
      clock = Math.max(clock, struct.clock + struct.length)
    }
    next.set(client, index)
    if (index === from) continue
    order.push(client, from, index)
    reached.set(client, clock)
    const waiters = waitersAt.get(client)
    if (!waiters) continue
    for (let passed = from; passed < index; passed++) {
      const released = waiters.get(passed)
      if (released) queue.push(...released)
      waiters.delete(passed)
    }
  }
  const waiting: Waiting = { structBytes: 0, clients: new Set(), deleteBytes: 0, reached: reachedBy, order }
  for (const [client, run] of update.structs) {
    const stopped = next.get(client) ?? 0
    if (stopped < run.length) order.push(client, stopped, run.length)
    for (let index = stopped; index < run.length; index++) {
      const struct = run[index] as (typeof run)[number]
      if (struct.gap) continue
      waiting.structBytes += struct.bytes
      waiting.clients.add(client)
    }
  }
  for (const [client, ranges] of update.deletions) {
    const clock = reachedBy(client)
    let bytes = 0
    for (let i = 0; i < ranges.length; i += 2) {
      const start = ranges[i] as number
      const length = ranges[i + 1] as number
      if (start + length > clock) bytes += varUintSize(start) + varUintSize(length)
    }
    if (bytes > 0) waiting.deleteBytes += bytes + varUintSize(client) + varUintSize(ranges.length / 2)
  }
  return waiting
}

/** Registers `waiter` to resume when `missing.client`'s run integrates the struct holding the id. */
function waitOn(
  update: ScannedUpdate,
  waitersAt: Map<number, Map<number, number[]>>,
  missing: { client: number; clock: number },
  waiter: number,
): void {
  const run = update.structs.get(missing.client)
  if (!run) return // nothing in the update can bring it: the waiter waits for good
  const low = firstEndingAfter(run, missing.clock)
  if (low === run.length) return
  const byIndex = waitersAt.get(missing.client) ?? new Map<number, number[]>()
  waitersAt.set(missing.client, byIndex)
  const waiters = byIndex.get(low) ?? []
  byIndex.set(low, waiters)
  waiters.push(waiter)
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

import { SerialQueue } from '../serial-queue.js'

/**
 * A room instance's one queue: whatever must see the room as the step before left it runs here,
 * one step at a time, like partyserver's one gate per room. Its life posts its load, unload and
 * end (`RoomLife`); the room posts each write that waits (an update the app's `beforeApply`
 * decides, a first write under a client id, which binds it to its author, a big update applied
 * over several turns, a restore). A write that can be applied at once is applied at once, and an
 * end posted behind a write runs after it, so no step ever finds its room freed halfway.
 *
 * A step never posts to its own mailbox and waits for it (it would wait for itself): inside a
 * step, what would post runs in place. Snapshot saves are not steps: a store that is slow or down
 * must not hold up the room's writes (`SnapshotWriter` keeps its own one write at a time).
 */
export class RoomMailbox extends SerialQueue {}

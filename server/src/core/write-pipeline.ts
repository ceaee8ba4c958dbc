import type * as Y from 'yjs'
import { contentCostOf, type ScannedUpdate } from '../protocol/update-scan.js'
import { structsAdded } from '../protocol/update-structs.js'
import { clockOf, waitingChanged, waitingOf } from '../protocol/yjs-internals.js'
import { applySentUpdate } from './apply-sent-update.js'
import { NO_BINDING } from './author-binding.js'
import type { CheckedUpdate, ClientUpdateChecks } from './client-update-checks.js'
import type { DocumentBounds } from './document-bounds.js'
import { afterBuilding, type BuildPace } from './pacing.js'
import type { RoomInit } from './room-init.js'
import type { UpdateApproval } from './update-approval.js'
import type { Write } from './update-origin.js'

export interface WritePipelineInit {
  doc: Y.Doc
  bounds: DocumentBounds
  checks: ClientUpdateChecks
  /** The app's `beforeApply`, if it has one: asked before each write is applied. */
  approval: UpdateApproval | null
  buildPace: Pick<BuildPace, 'built'> | null
  journal: Pick<RoomInit['journal'], 'record'>
  /** Runs `step` in the room's mailbox after the steps posted before it (not at all once it ended). */
  post(step: () => Promise<void>): Promise<void>
  /** The document changed (`bytes` applied, `built` on the heap): encodings stale, a save due. */
  changed(bytes: number, built: number): void
  /** A client's applied and journaled update, for the room's other connections. */
  forward(write: Write): void
}

/**
 * The room's write pipeline: a writer's update is checked (`ClientUpdateChecks`), decided by the
 * app's `beforeApply` and bound to its author when it must be, each of those a step in the room's
 * mailbox, then bounded by the document's ceilings, applied, journaled and forwarded. A big update
 * takes its own way (`BigUpdates`) into `apply`.
 */
export class WritePipeline {
  /** Set by the afterTransaction listener: whether the last applied update changed anything. */
  #lastApplyChanged = false

  constructor(private readonly init: WritePipelineInit) {
    init.doc.on('afterTransaction', this.#recordChange)
  }

  /**
   * A writer's update, applied in one go once checked; one the app's `beforeApply` decides, or the
   * first write under a client id (which waits for its binding to be journaled), is a step in the
   * mailbox (a promise, so the connection's later frames wait their turn).
   */
  write(write: Write): Promise<void> | undefined {
    const { writer, update } = write
    const { checks, approval, buildPace, post } = this.init
    const checked = checks.check(update, writer)
    const paced = (applying?: Promise<void>) =>
      afterBuilding(buildPace, writer.pacedAs, checked.scanned.builtBytes, applying)
    if (approval) return paced(post(() => this.#applyApproved(approval, write)))
    if (checked.authorship.kind !== 'apply') return paced(post(() => this.#applyOnceBound(write, checked)))
    this.#applyChecked(write, checked.scanned)
    return paced()
  }

  /** `write`, from a step already running in the mailbox: nothing posted, all of it here. */
  writeInStep(write: Write): Promise<void> | undefined {
    const { approval } = this.init
    if (approval) return this.#applyApproved(approval, write)
    return this.#checkAndApplyInStep(write)
  }

  /**
   * Applies an update; true if it changed the document, or what it holds waiting for missing
   * dependencies (waiting parts are forwarded, journaled and saved like the rest). `built`: what
   * its content builds (`contentCostOf`), if already known.
   */
  apply(update: Uint8Array, origin: unknown, built?: number): boolean {
    const { doc } = this.init
    const waitingBefore = waitingOf(doc)
    this.#lastApplyChanged = false
    let changed = false
    try {
      applySentUpdate(doc, update, origin)
    } finally {
      // Also when an observer failed after Yjs applied the bytes: the document did change, and
      // must be saved and encoded anew, never held in memory alone.
      changed = this.#lastApplyChanged || waitingChanged(doc, waitingBefore)
      if (changed) this.init.changed(update.length, built ?? contentCostOf(update).builtBytes)
    }
    return changed
  }

  /**
   * An update that passed the server's checks, once the app's `beforeApply` accepts it: checked
   * again then, as other writers may have changed the room while the hook ran. Nothing of it is
   * journaled, applied or bound before. A step in the mailbox: the room unloads only after it, so
   * an update accepted after its author left is still journaled and saved.
   */
  async #applyApproved(approval: UpdateApproval, write: Write): Promise<void> {
    await approval.approve(write.writer, write.update)
    return this.#checkAndApplyInStep(write)
  }

  /** In a step: checks the update against the room as it is now, binds its authors if need be, applies it. */
  #checkAndApplyInStep(write: Write): Promise<void> | undefined {
    const checked = this.init.checks.check(write.update, write.writer)
    if (checked.authorship.kind !== 'apply') return this.#applyOnceBound(write, checked)
    this.#applyChecked(write, checked.scanned)
  }

  /** A step in the mailbox: binds the client ids the update writes first, then applies it. */
  async #applyOnceBound(write: Write, first: CheckedUpdate): Promise<void> {
    const { checks } = this.init
    const { writer, update } = write
    let checked = first
    while (checked.authorship.kind !== 'apply') {
      const { authorship } = checked
      // Refused before anything is bound, the binding counted with the update.
      const binding =
        authorship.kind === 'bind' ? checks.authors.sizeOfBinding(authorship.clients, writer) : NO_BINDING
      this.#ensureSpaceFor(update, checked.scanned, binding)
      await (authorship.kind === 'bind' ? checks.authors.bind(authorship.clients, writer) : authorship.until)
      checked = checks.check(update, writer) // the room changed meanwhile
    }
    this.#applyChecked(write, checked.scanned)
  }

  /**
   * Refuses an update the document has no room for, with the binding it makes first if any: bytes,
   * structs, or the server's memory.
   */
  #ensureSpaceFor(update: Uint8Array, scanned: ScannedUpdate, binding = NO_BINDING): void {
    const { bounds, doc } = this.init
    bounds.ensureRoomFor(update.length + binding.bytes)
    const structs = structsAdded(scanned, (client) => clockOf(doc, client)) + binding.structs
    bounds.ensureStructsFor(structs)
    bounds.ensureMemoryFor(
      { structs, bytes: update.length + binding.bytes, builtBytes: scanned.builtBytes },
      false,
    )
  }

  #applyChecked(write: Write, scanned: ScannedUpdate): void {
    this.#ensureSpaceFor(write.update, scanned)
    // An update that changes nothing (a client resending what the room has) goes nowhere.
    if (!this.apply(write.update, write.writer, scanned.builtBytes)) return
    // Journaled before it is forwarded: whatever anyone saw survives a crash of this server.
    this.init.journal.record(write.update)
    this.init.forward(write)
  }

  readonly #recordChange = (transaction: Y.Transaction): void => {
    if (transaction.deleteSet.clients.size > 0) this.init.bounds.deleted()
    if (this.#lastApplyChanged || transaction.deleteSet.clients.size > 0) {
      this.#lastApplyChanged = true
      return
    }
    // Read in place: a copy of the state vector per transaction is garbage of O(clients).
    for (const [client, clock] of transaction.afterState) {
      if (transaction.beforeState.get(client) !== clock) {
        this.#lastApplyChanged = true
        return
      }
    }
  }
}

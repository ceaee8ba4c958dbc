import { CloseCode } from '@symphony/client/wire'
import { deferred } from '../deferred.js'
import { isOutOfSpace, ServerBusyError } from '../errors.js'
import type { MetadataSink } from '../ports/metadata-sink.js'
import type { RoomOwner } from '../ports/room-registry.js'
import { incarnationKey } from './incarnation.js'
import { RetryLater } from './pacing.js'
import type { Room } from './room.js'
import { RoomClaims } from './room-claims.js'
import type { JournalOutcomes } from './room-journal.js'
import { RoomLife, type RoomState } from './room-life.js'
import { type Loaded, RoomLoader } from './room-loader.js'
import type { RoomManagerDeps, RoomManagerOptions } from './room-manager-options.js'
import type { SnapshotWriter } from './snapshot-writer.js'

export type { RoomManagerDeps, RoomManagerOptions } from './room-manager-options.js'

/** A hold on one loaded room instance: released exactly once, on that instance. */
export interface RoomHold {
  readonly room: Room
  /** The incarnation held (see `incarnationKey`). */
  readonly generation: number
  /** Whether the instance held was deleted since (a hold keeps it from unloading, not from that). */
  deleted(): boolean
  release(): void
}

/**
 * Loads rooms on first use, keeps them while held, and unloads them after the last holder
 * leaves: grace period, final snapshot, deregister, unsubscribe, free. Each room instance's life
 * (its states and their order) is a `RoomLife`; this class provides its steps.
 */
export class RoomManager {
  readonly #lives = new Map<string, RoomLife<Loaded>>()
  readonly #claims: RoomClaims
  readonly #loader: RoomLoader
  /** Acquirers waiting for an instance to unload or be deleted before they load the room again. */
  readonly #waiting = new Map<string, number>()
  /** Who was refused as busy, turned away at the door until their wait is over (a shed room's clients too). */
  readonly retryLater = new RetryLater()
  /** This server's lease ran out unrenewed: other servers may take its rooms now. */
  #leaseRunOut = false

  constructor(
    private readonly deps: RoomManagerDeps,
    private readonly options: RoomManagerOptions,
  ) {
    this.#claims = new RoomClaims({
      registry: deps.registry,
      logger: deps.logger,
      waitMs: options.registryWaitMs ?? 2_000,
      serverId: options.serverId,
    })
    this.#loader = new RoomLoader({
      deps,
      options,
      claims: this.#claims,
      hookTimeoutMs: options.hookTimeoutMs ?? 5_000,
      journalOutcomes: this.#journalOutcomes,
      retryLater: this.retryLater,
      onFenced: (life, epoch, error) => this.#lost(life, epoch, error),
    })
    deps.journal.onPossibleLoss?.(() => this.#saveJournaledRooms())
    deps.registry.onLeaseLapsed((lapse) => {
      this.#leaseRunOut = lapse === 'run-out'
      if (lapse === 'run-out') {
        this.#giveUpUnconfirmable()
        return
      }
      deps.logger.warn(
        { rooms: this.#lives.size },
        "this server's lease had run out: checking that its rooms are still its own",
      )
      void this.#checkOwnership()
    })
  }

  /** The journal may have lost what it confirmed: save every room that relies on it now. */
  #saveJournaledRooms(): void {
    let rooms = 0
    for (const loaded of this.#loadedRooms()) {
      if (loaded.journal.backlog === 0) continue
      loaded.writer.saveSoon()
      rooms++
    }
    this.deps.logger.warn(
      { rooms },
      'the journal may have lost entries (its link came back); saving those rooms now',
    )
  }

  readonly #journalOutcomes: JournalOutcomes = {
    failed: (err, action, room, first) => {
      const { events, logger } = this.deps
      events.emit({
        type: 'journal.failed',
        room,
        action,
        error: err,
        outOfSpace: isOutOfSpace(err),
        at: Date.now(),
      })
      const life = this.#lives.get(room)
      if (action === 'append' && this.#leaseRunOut && life) this.#giveUp(life)
      // A lost link fails every append in flight at once: one line per room, the rest counted.
      if (first)
        logger.error(
          { err, room, action },
          action === 'append'
            ? 'journal write failed; saving a snapshot now, and the update is acknowledged once it is saved'
            : 'journal trim failed; the entries replay again into a document that holds them',
        )
    },
    appended: (room) => {
      this.deps.metrics.outOfSpace('journal', room, false)
      this.deps.metrics.dependencies.succeeded('journal')
    },
  }

  /** Journaled updates that no saved snapshot holds yet, over every loaded room. */
  journalBacklog(): number {
    let updates = 0
    for (const loaded of this.#loadedRooms()) updates += loaded.journal.backlog
    return updates
  }

  get roomCount(): number {
    return this.#lives.size
  }

  /** Connections holding `name` now, including those waiting for it to load, unload or be deleted. */
  holders(name: string): number {
    return (this.#lives.get(name)?.holders ?? 0) + (this.#waiting.get(name) ?? 0)
  }

  /** Records every loaded room's connection count and (approximate) size: the dashboard's charts. */
  sampleRooms(metadata: MetadataSink): void {
    for (const [name, life] of this.#lives) {
      const room = life.loaded?.room
      if (!room) continue
      metadata.record({
        type: 'room-sample',
        room: name,
        connections: room.connections.size,
        bytes: room.approximateBytes,
        changedAt: life.loaded?.changedAt(),
      })
    }
  }

  /** The loaded room, or undefined if it is not loaded on this server. */
  loadedRoom(name: string): Room | undefined {
    return this.#lives.get(name)?.loaded?.room
  }

  /** The loaded room and its incarnation, or undefined if it is not loaded on this server. */
  loadedIncarnation(name: string): { room: Room; generation: number } | undefined {
    const loaded = this.#lives.get(name)?.loaded
    return loaded ? { room: loaded.room, generation: loaded.generation } : undefined
  }

  /** Incarnation `generation` of the room was deleted while this server held it (it missed it): drop it. */
  dropDeleted(name: string, generation: number): void {
    void this.#heldLife(name, generation)?.delete()
  }

  /** The room's life here if it holds incarnation `generation` loaded (live or unloading). */
  #heldLife(name: string, generation: number): RoomLife<Loaded> | undefined {
    const life = this.#lives.get(name)
    return life?.loaded?.generation === generation ? life : undefined
  }

  /** The state of the room's instance here (`gone` when there is none). */
  roomState(name: string): RoomState {
    return this.#lives.get(name)?.state ?? 'gone'
  }

  /** The steps posted to the room's mailbox and not settled yet (`RoomMailbox`); 0 if it is gone. */
  roomSteps(name: string): number {
    return this.#lives.get(name)?.mailbox.posted ?? 0
  }

  /** Saves the room now if it is loaded and has unsaved changes; rejects if the save fails. */
  async save(name: string): Promise<void> {
    await this.#lives.get(name)?.loaded?.writer.flush()
  }

  /**
   * Holds the room, loading it if needed; the hold names the instance, so its release never lands
   * on a later one. A room being unloaded or deleted is waited out, then loaded afresh. `signal`
   * ends the wait (rejecting with its reason): the joiner left or its wait ran out, and the room's
   * load stops retrying once nobody waits for it.
   */
  async acquire(name: string, signal?: AbortSignal): Promise<RoomHold> {
    for (;;) {
      signal?.throwIfAborted()
      let life = this.#lives.get(name)
      this.#ensureMemoryToJoin(life)
      if (life && !life.admits) {
        await this.#waitFor(life, signal)
        continue
      }
      if (!life) life = this.#startLife(name)
      life.hold()
      let loaded: Loaded
      try {
        loaded = await life.whenReady(signal)
      } catch (error) {
        life.unhold()
        throw error
      }
      if (life.state !== 'live') {
        life.unhold() // deleted while it loaded: wait for the fresh one
        continue
      }
      const held = life
      let released = false
      return {
        room: loaded.room,
        generation: loaded.generation,
        deleted: () => held.state === 'deleting' || held.state === 'gone',
        release: () => {
          if (released) return
          released = true
          held.unhold()
        },
      }
    }
  }

  /**
   * Refuses (`ServerBusyError`) to load a room, or to join one unloading to free memory, while the
   * loaded documents are over their share of the server's memory budget. (A room that loads
   * reserves its document as it goes, `LoadReservation`: one that does not fit is refused then.)
   */
  #ensureMemoryToJoin(life: RoomLife<Loaded> | undefined): void {
    const memory = this.deps.memory
    if (!memory || (life?.loaded && !life.loaded.room.shedding)) return
    if (memory.documents() === 'within') return
    throw new ServerBusyError("the server's memory for documents is full: retry later")
  }

  async #waitFor(life: RoomLife<Loaded>, signal: AbortSignal | undefined): Promise<void> {
    const name = life.name
    this.#waiting.set(name, (this.#waiting.get(name) ?? 0) + 1)
    try {
      await life.nextChange(signal)
    } finally {
      const left = (this.#waiting.get(name) ?? 1) - 1
      if (left === 0) this.#waiting.delete(name)
      else this.#waiting.set(name, left)
    }
  }

  /**
   * Deletes the room: its clients (this server's and those relayed to it) are closed with
   * `RoomDeleted`, and its snapshot, journal and metadata are removed, so a later connection starts
   * it empty. Its owner deletes it: the caller holds the room (`acquire`, which claims and loads
   * it), so the deletion runs in the order of its life here, and no other server holds it.
   */
  async delete(name: string): Promise<void> {
    const life = this.#lives.get(name)
    const tombstone = deferred()
    tombstone.promise.catch(() => {}) // the deletion below reports it
    const deleting = life?.delete(tombstone.promise) ?? null // in effect here at once, before any wait
    const { snapshots, logger, events } = this.deps
    let generation: number
    /** The incarnation this server had loaded, if it had: its life removes that one's journal. */
    let loaded: number | null = null
    try {
      // The incarnation to delete: the later of what is loaded here and what the store holds.
      loaded = (await life?.ready.then((l) => l.generation).catch(() => null)) ?? null
      generation = Math.max(loaded ?? 0, await this.#storedGeneration(name))
      // The tombstone first: from now on a save in flight, and any load, meets it.
      await snapshots.delete(name, generation)
      tombstone.resolve()
    } catch (error) {
      tombstone.reject(error) // the journal stays: nothing acknowledged is lost by a failed deletion
      await deleting?.catch(() => {})
      throw error
    }
    // The store had moved past what was loaded here (or nothing was): the previous incarnation's
    // owner may have been killed between its tombstone and its journal's removal (its client
    // then retries the deletion).
    const previousUnfinished = generation > (loaded ?? 0)
    await deleting
    // A life that lost the room to another owner removed nothing: its journal goes here.
    if (loaded !== generation || life?.wasLost) await this.#removeJournal(name, generation)
    if (previousUnfinished && loaded !== generation - 1) await this.#removeJournal(name, generation - 1)
    logger.info({ room: name, generation }, 'room deleted')
    events.emit({ type: 'room.deleted', room: name, at: Date.now() })
  }

  /** The incarnation a load of the room would have now. */
  async #storedGeneration(name: string): Promise<number> {
    return (await this.deps.stateSource.incarnation(name)).generation
  }

  /**
   * The deleted incarnation's journal goes once its owner's saves are done. Its tombstone is in the
   * store already, so nothing writes the room back.
   */
  async #removeJournal(name: string, generation: number): Promise<void> {
    await this.deps.journal.delete(incarnationKey(name, generation))
  }

  /**
   * Saves every dirty room, retrying until `deadline` (epoch ms). Returns the rooms that could
   * not be saved in time.
   */
  async flushAll(deadline: number): Promise<string[]> {
    const unsaved: string[] = []
    await Promise.all(
      [...this.#lives].map(async ([name, life]) => {
        const loaded = life.loaded
        if (!loaded) return
        loaded.writer.stop()
        if (!(await this.#flushUntil(loaded.writer, deadline))) unsaved.push(name)
      }),
    )
    return unsaved
  }

  /**
   * Gives up every room this server owns, still holding them (draining): clients closed after this
   * find no owner and the next server claims the room at once, rather than being sent back here.
   * Writes after it carry the old epoch, refused once the next owner fenced the room.
   */
  async releaseAll(): Promise<void> {
    await Promise.all(
      [...this.#loadedRooms()].map((loaded) => this.#claims.release(loaded.room.name, loaded.epoch)),
    )
  }

  /** Releases and frees every room (after `flushAll`, at shutdown). */
  async unloadAll(): Promise<void> {
    // Saved already: a write in a room's mailbox still waiting for a save stops waiting.
    for (const loaded of this.#loadedRooms()) loaded.room.end()
    await Promise.all([...this.#lives.values()].map((life) => life.unloadNow()))
  }

  *#loadedRooms(): Iterable<Loaded> {
    for (const life of this.#lives.values()) if (life.loaded) yield life.loaded
  }

  #startLife(name: string): RoomLife<Loaded> {
    const life: RoomLife<Loaded> = new RoomLife({
      name,
      graceMs: this.options.roomGraceMs,
      ...(this.options.loadRetry ? { loadRetry: this.options.loadRetry } : {}),
      retryUnloadMs: this.options.snapshot.retryMaxMs,
      steps: {
        load: () => this.#loader.load(life),
        // After the writes posted before it (an update accepted after its author left is kept).
        saveBeforeUnload: (loaded) => loaded.writer.flush(),
        closeDeleted: (loaded) => {
          loaded.writer.stop()
          loaded.room.end()
          for (const connection of [...loaded.room.connections]) {
            connection.close(CloseCode.RoomDeleted, 'the room was deleted')
          }
        },
        closeLost: (loaded) => {
          loaded.writer.stop()
          loaded.room.end()
          for (const connection of [...loaded.room.connections]) {
            connection.close(CloseCode.TryAgainLater, 'another server owns the room now: reconnect')
          }
        },
        savesSettled: (loaded) => loaded.writer.settled(),
        free: (loaded) => this.#free(name, loaded),
        removeStored: async (loaded) => {
          if (loaded) await this.#removeJournal(name, loaded.generation)
        },
        loadFailed: (error) => {
          this.deps.metrics.roomLoadFailures.inc()
          this.deps.logger.error({ err: error, room: name }, 'room could not be loaded')
        },
        loadRetrying: (error, attempt, delayMs) => {
          this.deps.metrics.roomLoadRetries.inc()
          // The first failure in full, then one line per few attempts: an outage fails every load.
          if (attempt === 1 || attempt % 10 === 0)
            this.deps.logger.warn(
              { err: error, room: name, attempt, retryInMs: Math.round(delayMs) },
              'room load failed; retrying while clients wait',
            )
        },
      },
      onTransition: (_from, to) => {
        if (to === 'gone' && this.#lives.get(name) === life) this.#lives.delete(name)
      },
    })
    this.#lives.set(name, life)
    return life
  }

  /**
   * Where a client of `name` is served: null here (a life of it is here, this server owns it, or
   * the registry did not answer), else its owner elsewhere (`RoomClaims.ownerElsewhere`).
   */
  async ownerElsewhere(name: string, unreachable: (owner: RoomOwner) => boolean): Promise<RoomOwner | null> {
    return this.#lives.has(name) ? null : this.#claims.ownerElsewhere(name, unreachable)
  }

  /**
   * This server's lease ran out unrenewed, so another server may take its rooms: those whose edits
   * it cannot confirm (an append failed, and no snapshot holds it) are given up now, their clients
   * closed to reconnect where the room can be confirmed. Fencing already keeps it from
   * acknowledging what a later owner has not seen; this keeps their users from waiting on it.
   * Rooms whose journal answers stay: nobody takes them while the registry is down for all.
   */
  #giveUpUnconfirmable(): void {
    this.deps.logger.warn({ rooms: this.#lives.size }, "this server's lease ran out unrenewed")
    for (const life of this.#lives.values()) if (life.loaded?.journal.hasFailedAppends) this.#giveUp(life)
  }

  #giveUp(life: RoomLife<Loaded>): void {
    if (life.state === 'lost' || life.state === 'gone') return
    this.deps.logger.warn(
      { room: life.name },
      "this server's lease ran out and the room's journal fails; closing its clients so another server can take it",
    )
    void life.lose()
  }

  /** This server's lease ran out before its renewal: are its rooms still its own (`RoomClaims.checkOwnership`)? */
  #checkOwnership(): Promise<void> {
    return this.#claims.checkOwnership(
      [...this.#lives.values()].map((life) => ({
        name: life.name,
        epoch: () => life.loaded?.epoch,
        lose: () => void life.lose(),
      })),
    )
  }

  /** A later owner fenced this server's writes of the room: it stops serving it at once. */
  #lost(life: RoomLife<Loaded>, epoch: number, error: unknown): void {
    if (life.state === 'lost' || life.state === 'gone') return
    this.deps.metrics.fencedWrites.inc()
    this.deps.logger.warn(
      { err: error, room: life.name, epoch },
      'a later owner took the room; closing its clients here so they reach it',
    )
    void life.lose()
  }

  async #free(name: string, loaded: Loaded): Promise<void> {
    loaded.writer.stop()
    const { events, logger } = this.deps
    await this.#claims.release(name, loaded.epoch)
    const bytes = loaded.room.approximateBytes
    // Before the document is freed: a listener may still read it (an app's last onChange).
    events.emit({ type: 'room.unloaded', room: name, bytes, changedAt: loaded.changedAt(), at: Date.now() })
    loaded.room.destroy()
    logger.info({ room: name }, 'room unloaded')
  }

  async #flushUntil(writer: SnapshotWriter, deadline: number): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        await writer.flush()
        return true
      } catch {
        const wait = Math.min(this.options.snapshot.retryBaseMs * 2 ** attempt, deadline - Date.now())
        if (wait <= 0) return false
        await new Promise((resolve) => setTimeout(resolve, wait))
      }
    }
  }
}

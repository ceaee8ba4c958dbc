import { CloseCode } from '@symphony/client/wire'
import type * as Y from 'yjs'
import { within } from '../deadline.js'
import { deferred } from '../deferred.js'
import { isOutOfSpace, RoomMovedError, ServerBusyError } from '../errors.js'
import type { Logger } from '../logger.js'
import type { MetadataSink } from '../ports/metadata-sink.js'
import type { OwnershipClaim, RoomOwner, RoomRegistry } from '../ports/room-registry.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import type { JournalContents, UpdateJournal } from '../ports/update-journal.js'
import { newDoc } from '../protocol/new-doc.js'
import type { ServerHooks } from '../server-hooks.js'
import { AppMessageQuota } from './app-message-quota.js'
import { AppPersistence } from './app-persistence.js'
import { applyInSlices, replayInTurns } from './apply-in-slices.js'
import type { CoreMetrics } from './core-metrics.js'
import { LoadReservation } from './document-memory.js'
import type { EventStream } from './event-stream.js'
import { incarnationKey } from './incarnation.js'
import { type MemoryCharges, UNBOUNDED_MEMORY } from './memory-budget.js'
import { BuildPace, RetryLater, roomKey } from './pacing.js'
import { Room } from './room.js'
import type { RoomOptions } from './room-init.js'
import { type JournalOutcomes, RoomJournal } from './room-journal.js'
import { type LoadRetry, RoomLife, type RoomState } from './room-life.js'
import type { RoomStateSource } from './room-state-source.js'
import { timedWait } from './room-waits.js'
import { serverSender } from './server-sender.js'
import { type SnapshotPolicy, SnapshotWriter } from './snapshot-writer.js'

/**
 * How long a claim's answer is reused. Far shorter than any lease (`REGISTRY_LEASE_MS` is 1 s at
 * least): an owner named this recently still owns the room, or fencing refuses it.
 */
const CLAIM_REUSE_MS = 500

export interface RoomManagerOptions extends RoomOptions {
  /** How long an empty room stays loaded, since reconnects are common. */
  roomGraceMs: number
  /** The longest a load, unload or deletion waits for the registry (failures are tolerated). */
  registryWaitMs?: number
  /** How a failed load is retried while someone waits for the room; unset: not retried. */
  loadRetry?: LoadRetry
  snapshot: SnapshotPolicy
  /** The longest an app's hook may take (`HOOK_TIMEOUT_MS`). */
  hookTimeoutMs?: number
  /** Names the server on the broadcast events it sends itself. */
  serverId?: string
}

export interface RoomManagerDeps {
  registry: RoomRegistry
  snapshots: SnapshotStore
  journal: UpdateJournal
  stateSource: RoomStateSource
  /** Told what happens to the rooms (loaded, unloaded, deleted, changed, saved…). */
  events: EventStream
  metrics: CoreMetrics
  /** The server's memory budget: each room charges its presence and big updates to it. */
  memory?: MemoryCharges
  /** The embedding app's hooks (`ServerHooks`); default none. */
  hooks?: ServerHooks
  logger: Logger
}

/** How a room's document was built. */
interface LoadedFrom {
  loadedBytes: number
  /** What its content builds on the heap besides its structs and bytes (`contentCostOf`). */
  loadedBuiltBytes: number
  /** The journal entries replayed on top of the state. */
  replayed: JournalContents['position']
  /** How many updates were replayed. */
  replayedUpdates: number
  storedVersion: string | null
  generation: number
  source: 'snapshot' | 'empty'
  /** The life the room belongs to: told when the store shows the room was deleted. */
  life: RoomLife<Loaded>
  /** The epoch this server owns the room at. */
  epoch: number
  /** The epoch its durable writes carry (`epoch`, when the registry's epochs outlive the process). */
  fencedAt: number | undefined
}

interface Loaded {
  room: Room
  writer: SnapshotWriter
  journal: RoomJournal
  /** The room's incarnation (see `incarnationKey`). */
  generation: number
  /** The epoch this server owns the room at. */
  epoch: number
  /** When a client or the REST API last changed it here (ms), if one did since it loaded. */
  changedAt(): number | undefined
}

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
  /** Claims asked of the registry, in flight or just answered, by room: shared by the joins of a burst. */
  readonly #claims = new Map<string, Promise<OwnershipClaim>>()
  /** Acquirers waiting for an instance to unload or be deleted before they load the room again. */
  readonly #waiting = new Map<string, number>()
  /** The app's persistence beside the stores (`onLoad`, `onStore`). */
  readonly #app: AppPersistence
  /** What each user's app messages being handled hold, across the rooms. */
  readonly #appMessageQuota: AppMessageQuota
  readonly #buildPace = new BuildPace()
  /** Who was refused as busy, turned away at the door until their wait is over (a shed room's clients too). */
  readonly retryLater = new RetryLater()
  /** This server's lease ran out unrenewed: other servers may take its rooms now. */
  #leaseRunOut = false

  constructor(
    private readonly deps: RoomManagerDeps,
    private readonly options: RoomManagerOptions,
  ) {
    this.#appMessageQuota = new AppMessageQuota(deps.memory ?? UNBOUNDED_MEMORY)
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
    this.#app = new AppPersistence({
      hooks: deps.hooks ?? {},
      timeoutMs: this.#hookTimeoutMs,
      logger: deps.logger,
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

  get #hookTimeoutMs(): number {
    return this.options.hookTimeoutMs ?? 5_000
  }

  get #registryWaitMs(): number {
    return this.options.registryWaitMs ?? 2_000
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
    await Promise.all([...this.#loadedRooms()].map((loaded) => this.#release(loaded.room.name, loaded.epoch)))
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
        load: () => this.#load(life),
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
   * Claims the room, fences its journal at the epoch, then reads it: what an earlier owner
   * confirmed is in the read, and it confirms nothing more. Fails (`RoomMovedError`) when another
   * server owns the room, or (retried while its clients wait) when the registry does not answer
   * in time: serving a room no one owns could give it two owners.
   */
  async #load(life: RoomLife<Loaded>): Promise<Loaded> {
    const { name } = life
    const { registry, stateSource, logger, metrics } = this.deps
    let created: Loaded | null = null
    // The documents' share, reserved as the state is applied (each load against the others).
    const loading = new LoadReservation(this.deps.memory ?? UNBOUNDED_MEMORY)
    const claimed = timedWait(metrics.observeLoadWait, 'registry', () => this.#askClaim(name))
    claimed.catch(() => {}) // awaited below; a failure meanwhile is not unhandled
    // Which incarnation is current decides the journal stream.
    const incarnation = await stateSource.incarnation(name)
    const claim = await claimed.catch((err: unknown) => {
      metrics.roomClaims.labels('failed').inc()
      throw err
    })
    metrics.roomClaims.labels(claim.owned ? 'owned' : 'elsewhere').inc()
    if (!claim.owned) throw new RoomMovedError(`room ${name} is served by another server now; reconnect`)
    const { epoch } = claim
    // Fenced only with epochs that outlive the process (see `RoomOwnership.epochsOutliveProcess`).
    const fencedAt = registry.epochsOutliveProcess ? epoch : undefined
    try {
      if (fencedAt !== undefined)
        await this.deps.journal.fence(incarnationKey(name, incarnation.generation), fencedAt)
      const { state, source, journal, storedVersion, generation } = await stateSource.load(name, incarnation)
      const doc = newDoc()
      const { reserve } = loading
      const applied = state ? await applyInSlices(doc, state, { reserve }) : { encoded: null, builtBytes: 0 }
      const replayed = await this.#replay(name, doc, journal, reserve)
      // Joiners get the document encoded anew, never the loaded bytes: a snapshot saved by an
      // older version may still hold content that users deleted. The slicer's worker encodes a
      // big one off this thread; it holds for the document only if nothing was replayed on top.
      loading.release() // the room charges its document itself from here on
      const loaded = this.#createRoom(name, doc, {
        loadedBytes: (state?.length ?? 0) + replayed.bytes,
        loadedBuiltBytes: applied.builtBytes + replayed.builtBytes,
        replayed: journal.position,
        replayedUpdates: journal.updates.length,
        storedVersion,
        generation,
        source,
        life,
        epoch,
        fencedAt,
      })
      created = loaded
      if (applied.encoded && journal.updates.length === 0) loaded.room.adoptEncodedState(applied.encoded)
      // Nothing stored anywhere: a new room, which the app may seed (journaled, so it is saved).
      const seed = source === 'empty' && journal.updates.length === 0 ? await this.#app.seed(name) : null
      if (seed) loaded.room.seed(seed)
      const bytes = state?.length ?? 0
      logger.info({ room: name, source, bytes, journaled: journal.updates.length }, 'room loaded')
      this.deps.events.emit({ type: 'room.loaded', room: name, source, bytes, at: Date.now() })
      return loaded
    } catch (error) {
      loading.release()
      // Built and never handed out: its timers and its charge to the memory budget go with it.
      created?.writer.stop()
      created?.room.destroy()
      await this.#release(name, epoch)
      throw error
    }
  }

  /**
   * Where a client of `name` is served: null here (a life of it is here, this server owns it, or
   * the registry did not answer), else its owner elsewhere. An owner that `unreachable` says is
   * gone (nothing listens at its address: its process exited) is replaced at once by this server.
   */
  async ownerElsewhere(name: string, unreachable: (owner: RoomOwner) => boolean): Promise<RoomOwner | null> {
    if (this.#lives.has(name)) return null
    const { logger } = this.deps
    try {
      let claimed = await this.#askClaim(name)
      if (!claimed.owned && unreachable(claimed.owner)) claimed = await this.#askClaim(name, claimed.owner)
      return claimed.owned ? null : claimed.owner
    } catch (err) {
      logger.warn({ err, room: name }, 'claiming the room failed; it is served here')
      return null
    }
  }

  /**
   * The registry's claim of `name`, shared by every caller while it is in flight, and when it made
   * the room this server's for `CLAIM_REUSE_MS` after: a burst of joins (each client asks where the
   * room is served, then its load claims it) costs the registry one claim, not two per client. An
   * answer naming another owner is not kept: that owner may release the room the next moment
   * (draining), and a client sent back to it would be closed again.
   */
  #askClaim(name: string, gone?: RoomOwner): Promise<OwnershipClaim> {
    const shared = gone ? undefined : this.#claims.get(name)
    if (shared) return shared
    const { registry } = this.deps
    const claim = within(registry.claim(name, gone), this.#registryWaitMs, 'claiming the room')
    this.#claims.set(name, claim)
    const forget = () => {
      if (this.#claims.get(name) === claim) this.#claims.delete(name)
    }
    claim.then((answer) => (answer.owned ? setTimeout(forget, CLAIM_REUSE_MS).unref() : forget()), forget)
    return claim
  }

  /** Gives the room up if this server still owns it (a failure: its server's lease ends it). */
  async #release(name: string, epoch: number): Promise<void> {
    this.#claims.delete(name) // the next load claims it anew
    await within(this.deps.registry.release(name, epoch), this.#registryWaitMs, 'releasing the room').catch(
      (err: unknown) =>
        this.deps.logger.warn({ err, room: name }, 'release failed; the room stays ours until then'),
    )
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

  /**
   * This server's lease ran out before its renewal (a stall, a registry cut off): each room it
   * holds may be another server's by now, which no write of its own has found fenced yet (a room
   * nobody writes to). Each is asked of the registry; one owned elsewhere, or by nobody, is given
   * up at once, and its clients come back to reach its owner.
   */
  async #checkOwnership(lives = [...this.#lives.values()]): Promise<void> {
    const { registry, logger } = this.deps
    const unanswered: RoomLife<Loaded>[] = []
    await Promise.all(
      lives.map(async (life) => {
        const loaded = life.loaded
        if (!loaded) return
        const owner = await within(
          registry.ownerOf(life.name),
          this.#registryWaitMs,
          'the owner lookup',
        ).catch(() => undefined)
        if (owner === undefined) {
          unanswered.push(life)
          return
        }
        if (owner && owner.serverId === this.options.serverId && owner.epoch === loaded.epoch) return
        logger.warn({ room: life.name, owner }, 'another server owns the room now; closing its clients here')
        void life.lose()
      }),
    )
    // Asked again until answered: a room nobody writes to meets no fence that would tell, and would
    // stay served here, as it was, beside the room at its new owner.
    if (unanswered.length > 0) {
      setTimeout(() => void this.#checkOwnership(unanswered), this.#registryWaitMs).unref()
    }
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

  /**
   * Applies what was journaled since the snapshot; resolves with its size. Only applied updates are
   * journaled, so a record that cannot be read or applied is damage: it is skipped, counted and
   * logged, and the records after it still apply, rather than losing the room or what follows.
   */
  async #replay(
    name: string,
    doc: Y.Doc,
    journal: JournalContents,
    reserve: LoadReservation['reserve'],
  ): Promise<{ bytes: number; builtBytes: number }> {
    const { metrics, logger } = this.deps
    if (journal.skipped) {
      metrics.journalSkipped.inc(journal.skipped)
      logger.error({ room: name, records: journal.skipped }, 'skipped damaged journal records')
    }
    const skipped = (error: unknown) => {
      metrics.journalSkipped.inc()
      logger.error({ err: error, room: name }, 'skipped a journal record that does not apply')
    }
    const replayed = await replayInTurns(doc, journal.updates, { skipped, reserve })
    metrics.journalReplayed.inc(journal.updates.length)
    return replayed
  }

  #createRoom(name: string, doc: Y.Doc, from: LoadedFrom): Loaded {
    const { loadedBytes, loadedBuiltBytes, replayed, storedVersion, generation, life, epoch, fencedAt } = from
    const fenced =
      fencedAt === undefined
        ? {}
        : { epoch: fencedAt, onStale: (error: unknown) => this.#lost(life, fencedAt, error) }
    const { snapshots, journal, metrics, events, logger } = this.deps
    const key = incarnationKey(name, generation)
    let changedAt: number | undefined
    const roomJournal = new RoomJournal({
      journal,
      room: name,
      key,
      replayed: { position: replayed, updates: from.replayedUpdates },
      outcomes: this.#journalOutcomes,
      onAppendFailed: () => writer?.saveSoon(),
      ...fenced,
      onRecord: () => {
        changedAt = Date.now()
      },
    })
    let writer: SnapshotWriter | null = null
    const room = new Room({
      onShed: () => {
        // Its clients wait at the door: loaded again at once, it was shed again and again.
        this.retryLater.refused(roomKey(name))
        life.unloadWhenFree()
      },
      name,
      doc,
      loadedBytes,
      loadedBuiltBytes,
      options: this.options,
      journal: roomJournal,
      logger,
      onChange: () => writer?.markDirty(),
      observer: metrics,
      events,
      memory: this.deps.memory,
      hooks: {
        ...this.deps.hooks,
        timeoutMs: this.#hookTimeoutMs,
        serverSender: serverSender(this.options.serverId ?? 'server'),
        appMessageQuota: this.#appMessageQuota,
      },
      buildPace: this.#buildPace,
      mailbox: life.mailbox,
    })
    writer = new SnapshotWriter({
      room,
      store: snapshots,
      journal: roomJournal,
      policy: this.options.snapshot,
      metrics,
      events,
      logger,
      // Replayed entries are in no snapshot yet: save (and then trim) them like any change.
      unsavedAtLoad: replayed.size > 0,
      storedVersion,
      generation,
      onDeleted: () => {
        logger.warn({ room: name, generation }, 'the room was deleted while this server held it; dropping it')
        void life.delete()
      },
      ...(this.#app.storesSnapshots ? { onSaved: (state) => this.#app.stored(name, state) } : {}),
      ...fenced,
    })
    return {
      room,
      writer,
      journal: roomJournal,
      generation,
      epoch,
      changedAt: () => changedAt,
    }
  }

  async #free(name: string, loaded: Loaded): Promise<void> {
    loaded.writer.stop()
    const { events, logger } = this.deps
    await this.#release(name, loaded.epoch)
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

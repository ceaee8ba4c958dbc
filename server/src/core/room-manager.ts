import { CloseCode } from '@symphony/client/wire'
import type * as Y from 'yjs'
import { within } from '../deadline.js'
import { deferred } from '../deferred.js'
import { isOutOfSpace, RoomMovedError, ServerBusyError } from '../errors.js'
import type { Logger } from '../logger.js'
import type { MetadataSink } from '../ports/metadata-sink.js'
import type { PubSub } from '../ports/pubsub.js'
import type { OwnershipClaim, RoomOwner, RoomRegistry } from '../ports/room-registry.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import type { JournalContents, UpdateJournal } from '../ports/update-journal.js'
import { isRoomDeletedFrame, ROOM_DELETED_FRAME } from '../protocol/codec.js'
import { newDoc } from '../protocol/new-doc.js'
import type { ServerHooks } from '../server-hooks.js'
import { AppMessageQuota } from './app-message-quota.js'
import { AppPersistence } from './app-persistence.js'
import { applyInSlices, replayInTurns } from './apply-in-slices.js'
import type { CoreMetrics } from './core-metrics.js'
import { LoadReservation } from './document-memory.js'
import type { EventStream } from './event-stream.js'
import type { HeldRoomSweep } from './held-room-sweep.js'
import { incarnationKey } from './incarnation.js'
import { type MemoryCharges, UNBOUNDED_MEMORY } from './memory-budget.js'
import { type HeldIncarnation, MissedDeletionChecks } from './missed-deletions.js'
import { orphanAdoption, skippedRecord } from './orphan-adoption.js'
import { BuildPace } from './pacing.js'
import { Room, type RoomOptions } from './room.js'
import { type JournalOutcomes, RoomJournal } from './room-journal.js'
import { type LoadRetry, RoomLife, type RoomState } from './room-life.js'
import type { RoomStateSource } from './room-state-source.js'
import { timedWait } from './room-waits.js'
import { serverSender } from './server-sender.js'
import { type KnownStoredVersion, type SnapshotPolicy, SnapshotWriter } from './snapshot-writer.js'

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
  /**
   * One copy per room: a room another server owns is never loaded here (its clients are relayed
   * there); a load that finds it owned elsewhere fails (`RoomMovedError`), and its clients retry.
   */
  relay?: boolean
}

export interface RoomManagerDeps {
  pubsub: PubSub
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
  storedVersion: KnownStoredVersion
  generation: number
  source: 'peer' | 'snapshot' | 'empty'
  /** The life the room belongs to: told when the store shows the room was deleted. */
  life: RoomLife<Loaded>
  /** The epoch this server owns the room at, if it does. */
  epoch: number | undefined
  /** The epoch its durable writes carry (`epoch`, when the registry's epochs outlive the process). */
  fencedAt: number | undefined
}

interface Loaded {
  room: Room
  /** Settles once the registration is done or given up (a deregistration waits for it). */
  registered: Promise<void>
  writer: SnapshotWriter
  journal: RoomJournal
  /** The room's incarnation (see `incarnationKey`). */
  generation: number
  /** The epoch this server owns the room at; undefined: it holds a copy of a room it does not own. */
  epoch: number | undefined
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
  readonly #missedDeletions: MissedDeletionChecks
  /** Adopts the journal entries of servers that are gone (a journal several servers write). */
  readonly #orphanAdoption: HeldRoomSweep | null = null
  /** Per sweep, the rooms still loading that it visits once they are live (see `#sweepEveryRoom`). */
  readonly #sweptOnceLive = new Map<HeldRoomSweep, WeakSet<RoomLife<Loaded>>>()
  /** What each user's app messages being handled hold, across the rooms. */
  readonly #appMessageQuota: AppMessageQuota
  readonly #buildPace = new BuildPace()

  constructor(
    private readonly deps: RoomManagerDeps,
    private readonly options: RoomManagerOptions,
  ) {
    this.#appMessageQuota = new AppMessageQuota(deps.memory ?? UNBOUNDED_MEMORY)
    deps.journal.onPossibleLoss?.(() => this.#saveJournaledRooms())
    this.#missedDeletions = new MissedDeletionChecks({
      storedGeneration: (name) => this.#storedGeneration(name),
      drop: (name, generation) => this.dropDeleted(name, generation),
      isHeld: (name, generation) => this.#heldLife(name, generation) !== undefined,
      logger: deps.logger,
    })
    deps.pubsub.onPossibleLoss?.(() => this.#sweepEveryRoom(this.#missedDeletions))
    const orphans = deps.journal.orphans
    if (orphans) {
      const adoption = orphanAdoption({
        orphans,
        held: (name, generation) => {
          const life = this.#heldLife(name, generation)
          return life?.state === 'live' || life?.state === 'unloading'
            ? (life.loaded ?? undefined)
            : undefined
        },
        metrics: deps.metrics,
        logger: deps.logger,
      })
      this.#orphanAdoption = adoption
      orphans.onWriterGone(() => this.#sweepEveryRoom(adoption))
    }
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

  /**
   * Something may have happened unseen to every room held here (pub/sub may have missed a deletion
   * notice, a server may have died with journal entries it told no one): `sweep` visits each, and
   * each room still loading once it is live (its load may have read the stores before it happened).
   */
  #sweepEveryRoom(sweep: HeldRoomSweep): void {
    const onceLive = this.#sweptOnceLive.get(sweep) ?? new WeakSet<RoomLife<Loaded>>()
    this.#sweptOnceLive.set(sweep, onceLive)
    const held: HeldIncarnation[] = []
    for (const [name, life] of this.#lives) {
      if (life.loaded) held.push({ name, generation: life.loaded.generation })
      else if (life.state === 'loading' && !onceLive.has(life)) {
        // One reaction per life: a load retried through an outage may see many losses.
        onceLive.add(life)
        life.ready.then(
          ({ generation }) => sweep.check([{ name, generation }]),
          () => {},
        )
      }
    }
    sweep.check(held)
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

  /** Incarnation `generation` of the room was deleted elsewhere while this server held it: drop it. */
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
   * Deletes the room: its clients, here and on every other server, are closed with `RoomDeleted`,
   * and its snapshot, journal and metadata are removed, so a later connection starts it empty.
   */
  async delete(name: string): Promise<void> {
    const life = this.#lives.get(name)
    const tombstone = deferred()
    tombstone.promise.catch(() => {}) // the deletion below reports it
    const deleting = life?.delete(tombstone.promise) ?? null // in effect here at once, before any wait
    const { snapshots, pubsub, logger, events } = this.deps
    let generation: number
    /** The incarnation this server had loaded, if it had: its life removes that one's journal. */
    let loaded: number | null = null
    try {
      // The incarnation to delete: the later of what is loaded here and what the store holds.
      loaded = (await life?.ready.then((l) => l.generation).catch(() => null)) ?? null
      generation = Math.max(loaded ?? 0, await this.#storedGeneration(name))
      // The tombstone first: from now on a save in flight anywhere, and any load, meets it.
      await snapshots.delete(name, generation)
      tombstone.resolve()
    } catch (error) {
      tombstone.reject(error) // the journal stays: nothing acknowledged is lost by a failed deletion
      await deleting?.catch(() => {})
      throw error
    }
    pubsub.publish(incarnationKey(name, generation), ROOM_DELETED_FRAME)
    // The store had moved past what was loaded here (or nothing was): the previous incarnation's
    // deletion may never have been told, its server killed between its tombstone and its notice
    // (its client then retries the deletion). Whoever still holds that one drops it too.
    const previousUntold = generation > (loaded ?? 0)
    if (previousUntold) pubsub.publish(incarnationKey(name, generation - 1), ROOM_DELETED_FRAME)
    await deleting
    // A life that lost the room to another owner removed nothing: its journal goes here.
    if (loaded !== generation || life?.wasLost) await this.#removeJournal(name, generation)
    // Its journal too: its only holder may have died with the deletion half done.
    if (previousUntold && loaded !== generation - 1) await this.#removeJournal(name, generation - 1)
    logger.info({ room: name, generation }, 'room deleted')
    events.emit({ type: 'room.deleted', room: name, at: Date.now() })
  }

  /** The incarnation a load of the room would have now. */
  async #storedGeneration(name: string): Promise<number> {
    return (await this.deps.stateSource.incarnation(name)).generation
  }

  /**
   * The deleted incarnation's journal goes once this server's own saves are done. Its tombstone is
   * in the store already (the deleting server writes it before telling anyone), so this is all
   * that every server that held the room does, and nothing writes the room back.
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

  /** Deregisters, unsubscribes and frees every room (after `flushAll`, at shutdown). */
  async unloadAll(): Promise<void> {
    this.#missedDeletions.stop()
    this.#orphanAdoption?.stop()
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
        saveBeforeUnload: async (loaded) => {
          await loaded.room.approvalsSettled() // an update accepted after its author left is kept
          await loaded.writer.flush()
        },
        closeDeleted: (loaded) => {
          loaded.writer.stop()
          for (const connection of [...loaded.room.connections]) {
            connection.close(CloseCode.RoomDeleted, 'the room was deleted')
          }
        },
        closeLost: (loaded) => {
          loaded.writer.stop()
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

  /** Subscribe first and buffer, so nothing published while the state loads is missed. */
  async #load(life: RoomLife<Loaded>): Promise<Loaded> {
    const { name } = life
    const { pubsub, registry, stateSource, logger } = this.deps
    const buffered: Uint8Array[] = []
    let room: Room | null = null
    let created: Loaded | null = null
    // The documents' share, reserved as the state is applied (each load against the others).
    const loading = new LoadReservation(this.deps.memory ?? UNBOUNDED_MEMORY)
    // The registry's answer comes while the store and pub/sub are asked (see lookUpPeers).
    const peers = stateSource.lookUpPeers(name)
    const claimed = this.#claim(name)
    claimed.catch(() => {}) // awaited below; a failure meanwhile is not unhandled
    // Which incarnation is current decides the channel and the journal streams.
    const incarnation = await stateSource.incarnation(name)
    const channel = incarnationKey(name, incarnation.generation)
    const epoch = await claimed
    if (epoch === undefined && this.options.relay) {
      throw new RoomMovedError(`room ${name} is served by another server now; reconnect`)
    }
    // Fenced only with epochs that outlive the process (see `RoomOwnership.epochsOutliveProcess`).
    const fencedAt = registry.epochsOutliveProcess ? epoch : undefined
    const observeWait = this.deps.metrics.observeLoadWait
    await timedWait(observeWait, 'pubsub', () =>
      pubsub.subscribe(channel, (frame) => {
        if (isRoomDeletedFrame(frame)) void life.delete()
        else if (room) room.receiveRemote(frame)
        else buffered.push(frame)
      }),
    )
    try {
      // Fenced before it is read: what an earlier owner confirmed is in the read, and it confirms
      // nothing more.
      if (fencedAt !== undefined) await this.deps.journal.fence(channel, fencedAt)
      const { state, source, journal, storedVersion, generation } = await stateSource.load(
        name,
        incarnation,
        peers,
      )
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
      for (const frame of buffered) loaded.room.receiveRemote(frame)
      room = loaded.room // from here on frames go straight to the room, also while registering
      // Registering only lets peers fetch the state from here; clients need not wait for it (a
      // server that finds no peer loads the snapshot and the journal, which hold every
      // acknowledged edit, and anti-entropy brings the rest). A registry outage must not stop
      // the room either: peers cannot find it here until the next lease refresh succeeds.
      loaded.registered = timedWait(observeWait, 'registry', () =>
        within(registry.register(name), this.#registryWaitMs, 'registering'),
      ).catch((err: unknown) => logger.warn({ err, room: name }, 'register failed'))
      // Peers holding newer state answer now; and a peer that held the room alone, publishing
      // nothing (no one to hear it), hears of this server and publishes again (ChannelPeers).
      loaded.room.publishDigest()
      loaded.room.askPeersForPresence()
      const bytes = state?.length ?? 0
      logger.info({ room: name, source, bytes, journaled: journal.updates.length }, 'room loaded')
      this.deps.events.emit({ type: 'room.loaded', room: name, source, bytes, at: Date.now() })
      return loaded
    } catch (error) {
      loading.release()
      // Built and never handed out: its timers and its charge to the memory budget go with it.
      created?.writer.stop()
      created?.room.destroy()
      await Promise.all([pubsub.unsubscribe(channel).catch(() => {}), this.#release(name, epoch)])
      throw error
    }
  }

  /**
   * Claims the room for this server: the epoch it owns it at, or undefined when another server
   * owns it. With the relay, a registry that does not answer in time fails the load (retried
   * while its clients wait): serving a room no one owns could give it two owners. Without it, the
   * room loads unowned, as every server's copy did before owners.
   */
  async #claim(name: string): Promise<number | undefined> {
    const { metrics, logger } = this.deps
    try {
      const claim = await this.#askClaim(name)
      metrics.roomClaims.labels(claim.owned ? 'owned' : 'elsewhere').inc()
      return claim.owned ? claim.epoch : undefined
    } catch (err) {
      metrics.roomClaims.labels('failed').inc()
      if (this.options.relay) throw err
      logger.warn({ err, room: name }, 'claiming the room failed; it loads unowned')
      return undefined
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

  /** Gives the room up if this server owns it (a failure: its server's lease ends it). */
  async #release(name: string, epoch: number | undefined): Promise<void> {
    this.#claims.delete(name) // the next load claims it anew
    if (epoch === undefined) return
    await within(this.deps.registry.release(name, epoch), this.#registryWaitMs, 'releasing the room').catch(
      (err: unknown) =>
        this.deps.logger.warn({ err, room: name }, 'release failed; the room stays ours until then'),
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
    const skipped = skippedRecord(this.deps, name)
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
    const { pubsub, snapshots, journal, metrics, events, logger } = this.deps
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
      onShed: () => life.unloadWhenFree(),
      name,
      channel: key,
      doc,
      loadedBytes,
      loadedBuiltBytes,
      options: this.options,
      pubsub,
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
      loadedFromPeer: from.source === 'peer',
      saves: {
        get savedVersion() {
          return writer?.savedVersion ?? -1
        },
        whenSaved: (version) => writer?.whenSaved(version) ?? Promise.resolve(),
        saveSoon: () => writer?.saveSoon(),
      },
    })
    writer = new SnapshotWriter({
      room,
      store: snapshots,
      journal: roomJournal,
      policy: this.options.snapshot,
      metrics,
      events,
      logger,
      // Replayed entries are in no snapshot yet: save (and then trim) them like any change. So is
      // a peer's state: it may hold edits its server acknowledged to nobody and then lost.
      unsavedAtLoad: replayed.size > 0 || from.source === 'peer',
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
      registered: Promise.resolve(),
    }
  }

  async #free(name: string, loaded: Loaded): Promise<void> {
    loaded.writer.stop()
    const { registry, pubsub, events, logger } = this.deps
    await Promise.all([
      // After the registration, which would otherwise land last and hold a lease for nobody.
      loaded.registered
        .then(() => within(registry.deregister(name), this.#registryWaitMs, 'deregistering'))
        .catch((err) => logger.warn({ err, room: name }, 'deregister failed; the lease runs out')),
      pubsub
        .unsubscribe(incarnationKey(name, loaded.generation))
        .catch((err) => logger.warn({ err, room: name }, 'unsubscribe failed')),
      this.#release(name, loaded.epoch),
    ])
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

import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import { isOutOfSpace } from '../errors.js'
import type { Logger } from '../logger.js'
import type { ServerMetrics } from '../metrics.js'
import type { MetadataSink } from '../ports/metadata-sink.js'
import type { PubSub } from '../ports/pubsub.js'
import type { RoomEventSink } from '../ports/room-events.js'
import type { RoomRegistry } from '../ports/room-registry.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import type { JournalContents, UpdateJournal } from '../ports/update-journal.js'
import { isRoomDeletedFrame, ROOM_DELETED_FRAME } from '../protocol/codec.js'
import { applyInSlices, replayInTurns } from './apply-in-slices.js'
import { Room, type RoomOptions } from './room.js'
import { type JournalOutcomes, RoomJournal } from './room-journal.js'
import type { RoomStateSource } from './room-state-source.js'
import { type KnownStoredVersion, type SnapshotPolicy, SnapshotWriter } from './snapshot-writer.js'

export interface RoomManagerOptions extends RoomOptions {
  /** How long an empty room stays loaded, since reconnects are common. */
  roomGraceMs: number
  snapshot: SnapshotPolicy
}

export interface RoomManagerDeps {
  pubsub: PubSub
  registry: RoomRegistry
  snapshots: SnapshotStore
  journal: UpdateJournal
  stateSource: RoomStateSource
  metadata: MetadataSink
  /** Webhooks: told of local changes and deletions. */
  events: RoomEventSink
  metrics: ServerMetrics
  logger: Logger
}

/** A room's place in the manager, from the first acquire until it is unloaded. */
interface Slot {
  readonly name: string
  /** Connections that acquired the room, counted before the load finishes. */
  holders: number
  readonly ready: Promise<Loaded>
  loaded: Loaded | null
  graceTimer: NodeJS.Timeout | null
  /** Set while unloading; resolves when the slot is gone or the unload was abandoned. */
  unloading: Promise<void> | null
}

/** How a room's document was built. */
interface LoadedFrom {
  loadedBytes: number
  /** The journal entries replayed on top of the state. */
  replayed: JournalContents['position']
  /** How many updates were replayed. */
  replayedUpdates: number
  storedVersion: KnownStoredVersion
}

interface Loaded {
  room: Room
  writer: SnapshotWriter
  journal: RoomJournal
}

/**
 * Loads rooms on first use, keeps them while held, and unloads them after the last holder
 * leaves: grace period, final snapshot, deregister, unsubscribe, free.
 */
export class RoomManager {
  readonly #slots = new Map<string, Slot>()
  /** Acquirers waiting for an unload to finish before they load the room again. */
  readonly #waitingForUnload = new Map<string, number>()

  constructor(
    private readonly deps: RoomManagerDeps,
    private readonly options: RoomManagerOptions,
  ) {
    deps.metrics.storageFull.labels('journal').set(0)
    deps.metrics.storageFull.labels('snapshots').set(0)
    deps.journal.onPossibleLoss?.(() => this.#saveJournaledRooms())
  }

  /** The journal may have lost what it confirmed: save every room that relies on it now. */
  #saveJournaledRooms(): void {
    let rooms = 0
    for (const slot of this.#slots.values()) {
      if (!slot.loaded || slot.loaded.journal.backlog === 0) continue
      slot.loaded.writer.saveSoon()
      rooms++
    }
    this.deps.logger.warn(
      { rooms },
      'the journal may have lost entries (its link came back); saving those rooms now',
    )
  }

  readonly #journalOutcomes: JournalOutcomes = {
    failed: (err, action, room) => {
      const { metrics, logger } = this.deps
      metrics.journalFailures.labels(action).inc()
      metrics.dependencies.failed('journal', action, err)
      if (isOutOfSpace(err)) metrics.outOfSpace('journal', room, true)
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
    for (const slot of this.#slots.values()) updates += slot.loaded?.journal.backlog ?? 0
    return updates
  }

  get roomCount(): number {
    return this.#slots.size
  }

  /** Connections holding `name` now, including those waiting for it to load or unload. */
  holders(name: string): number {
    return (this.#slots.get(name)?.holders ?? 0) + (this.#waitingForUnload.get(name) ?? 0)
  }

  /** The loaded room, or undefined if it is not loaded on this server. */
  /** Records every loaded room's connection count and (approximate) size: the dashboard's charts. */
  sampleRooms(metadata: MetadataSink): void {
    for (const slot of this.#slots.values()) {
      const room = slot.loaded?.room
      if (!room) continue
      metadata.record({
        type: 'room-sample',
        room: slot.name,
        connections: room.connections.size,
        bytes: room.approximateBytes,
      })
    }
  }

  loadedRoom(name: string): Room | undefined {
    return this.#slots.get(name)?.loaded?.room
  }

  /** Saves the room now if it is loaded and has unsaved changes; rejects if the save fails. */
  async save(name: string): Promise<void> {
    await this.#slots.get(name)?.loaded?.writer.flush()
  }

  /** Holds the room, loading it if needed. Every successful acquire needs one `release`. */
  async acquire(name: string): Promise<Room> {
    let slot = this.#slots.get(name)
    while (slot?.unloading) {
      this.#waitingForUnload.set(name, (this.#waitingForUnload.get(name) ?? 0) + 1)
      await slot.unloading
      const left = (this.#waitingForUnload.get(name) ?? 1) - 1
      if (left === 0) this.#waitingForUnload.delete(name)
      else this.#waitingForUnload.set(name, left)
      slot = this.#slots.get(name)
    }
    if (!slot) slot = this.#startLoad(name)
    slot.holders++
    this.#cancelGrace(slot)
    try {
      return (await slot.ready).room
    } catch (error) {
      slot.holders--
      throw error
    }
  }

  release(name: string): void {
    const slot = this.#slots.get(name)
    if (!slot) return
    slot.holders--
    if (slot.holders === 0 && slot.loaded) this.#startGrace(slot, this.options.roomGraceMs)
  }

  /**
   * Deletes the room: its clients, here and on every other server, are closed with `RoomDeleted`,
   * and its snapshot, journal and metadata are removed, so a later connection starts it empty.
   */
  async delete(name: string): Promise<void> {
    this.deps.pubsub.publish(name, ROOM_DELETED_FRAME)
    await this.#dropDeleted(name)
    this.deps.events.emit({ type: 'room.deleted', room: name, at: Date.now() })
  }

  /**
   * Closes a deleted room's clients, drops it unsaved, then removes what the stores hold. Every
   * server that held it does this once its own queued saves are done, so none of them writes the
   * room back after the last removal.
   */
  async #dropDeleted(name: string): Promise<void> {
    const slot = this.#slots.get(name)
    await slot?.ready.catch(() => {})
    await slot?.unloading
    const loaded = slot?.loaded
    if (slot && loaded && this.#slots.get(name) === slot) {
      loaded.writer.stop()
      for (const connection of [...loaded.room.connections]) {
        connection.close(CloseCode.RoomDeleted, 'the room was deleted')
      }
      await loaded.writer.settled()
      await this.#free(slot)
    }
    const { snapshots, journal, metadata } = this.deps
    await Promise.all([snapshots.delete(name), journal.delete(name)])
    metadata.record({ type: 'room-deleted', room: name })
    this.deps.logger.info({ room: name }, 'room deleted')
  }

  /**
   * Saves every dirty room, retrying until `deadline` (epoch ms). Returns the rooms that could
   * not be saved in time.
   */
  async flushAll(deadline: number): Promise<string[]> {
    const unsaved: string[] = []
    await Promise.all(
      [...this.#slots.values()].map(async (slot) => {
        if (!slot.loaded) return
        slot.loaded.writer.stop()
        if (!(await this.#flushUntil(slot.loaded.writer, deadline))) unsaved.push(slot.name)
      }),
    )
    return unsaved
  }

  /** Deregisters, unsubscribes and frees every room (after `flushAll`, at shutdown). */
  async unloadAll(): Promise<void> {
    await Promise.all([...this.#slots.values()].map((slot) => this.#free(slot)))
  }

  #startLoad(name: string): Slot {
    const ready = this.#load(name).then(
      (loaded) => {
        slot.loaded = loaded
        this.deps.metrics.rooms.inc()
        if (slot.holders === 0) this.#startGrace(slot, this.options.roomGraceMs)
        return loaded
      },
      (error: unknown) => {
        this.#slots.delete(name)
        this.deps.metrics.roomLoadFailures.inc()
        this.deps.logger.error({ err: error, room: name }, 'room could not be loaded')
        throw error
      },
    )
    const slot: Slot = { name, holders: 0, ready, loaded: null, graceTimer: null, unloading: null }
    this.#slots.set(name, slot)
    return slot
  }

  /** Subscribe first and buffer, so nothing published while the state loads is missed. */
  async #load(name: string): Promise<Loaded> {
    const { pubsub, registry, stateSource, logger } = this.deps
    const buffered: Uint8Array[] = []
    let room: Room | null = null
    await pubsub.subscribe(name, (frame) => {
      if (isRoomDeletedFrame(frame)) void this.#dropDeleted(name)
      else if (room) room.receiveRemote(frame)
      else buffered.push(frame)
    })
    try {
      const { state, source, journal, storedVersion } = await stateSource.load(name)
      const doc = new Y.Doc()
      const encoded = state ? await applyInSlices(doc, state) : null
      const journaledBytes = await this.#replay(name, doc, journal)
      // Joiners get the document encoded anew, never the loaded bytes: a snapshot saved by an
      // older version may still hold content that users deleted. The slicer's worker encodes a
      // big one off this thread; it holds for the document only if nothing was replayed on top.
      const loaded = this.#createRoom(name, doc, {
        loadedBytes: (state?.length ?? 0) + journaledBytes,
        replayed: journal.position,
        replayedUpdates: journal.updates.length,
        storedVersion,
      })
      if (encoded && journal.updates.length === 0) loaded.room.adoptEncodedState(encoded)
      for (const frame of buffered) loaded.room.receiveRemote(frame)
      room = loaded.room // from here on frames go straight to the room, also while registering
      // A registry outage must not stop the room from loading: peers just cannot find it here
      // until the adapter's next lease refresh succeeds.
      await registry
        .register(name)
        .catch((err: unknown) => logger.warn({ err, room: name }, 'register failed'))
      if (source !== 'peer') loaded.room.publishDigest() // peers holding newer state answer now
      this.deps.metrics.roomLoads.labels(source).inc()
      logger.info(
        { room: name, source, bytes: state?.length ?? 0, journaled: journal.updates.length },
        'room loaded',
      )
      this.deps.metadata.record({ type: 'room-loaded', room: name, bytes: state?.length ?? 0 })
      return loaded
    } catch (error) {
      await pubsub.unsubscribe(name).catch(() => {})
      throw error
    }
  }

  /**
   * Applies what was journaled since the snapshot; resolves with its size. Only applied updates are
   * journaled, so a record that cannot be read or applied is damage: it is skipped, counted and
   * logged, and the records after it still apply, rather than losing the room or what follows.
   */
  async #replay(name: string, doc: Y.Doc, journal: JournalContents): Promise<number> {
    const { metrics, logger } = this.deps
    if (journal.skipped) {
      metrics.journalSkipped.inc(journal.skipped)
      logger.error({ room: name, records: journal.skipped }, 'skipped damaged journal records')
    }
    const bytes = await replayInTurns(doc, journal.updates, (error) => {
      metrics.journalSkipped.inc()
      logger.error({ err: error, room: name }, 'skipped a journal record that does not apply')
    })
    metrics.journalReplayed.inc(journal.updates.length)
    return bytes
  }

  #createRoom(name: string, doc: Y.Doc, from: LoadedFrom): Loaded {
    const { loadedBytes, replayed, storedVersion } = from
    const { pubsub, snapshots, journal, metrics, logger } = this.deps
    const roomJournal = new RoomJournal({
      journal,
      room: name,
      replayed: { position: replayed, updates: from.replayedUpdates },
      outcomes: this.#journalOutcomes,
      onAppendFailed: () => writer?.saveSoon(),
      onRecord: () => this.deps.events.emit({ type: 'document.updated', room: name, at: Date.now() }),
    })
    let writer: SnapshotWriter | null = null
    const room = new Room({
      name,
      doc,
      loadedBytes,
      options: this.options,
      pubsub,
      journal: roomJournal,
      logger,
      onChange: () => writer?.markDirty(),
      observer: metrics,
    })
    writer = new SnapshotWriter({
      room,
      store: snapshots,
      journal: roomJournal,
      policy: this.options.snapshot,
      metrics,
      logger,
      // Replayed entries are in no snapshot yet: save (and then trim) them like any change.
      unsavedAtLoad: replayed.size > 0,
      storedVersion,
    })
    return { room, writer, journal: roomJournal }
  }

  #startGrace(slot: Slot, delayMs: number): void {
    this.#cancelGrace(slot)
    slot.graceTimer = setTimeout(() => {
      slot.graceTimer = null
      if (slot.holders === 0) slot.unloading = this.#unload(slot)
    }, delayMs)
    slot.graceTimer.unref()
  }

  #cancelGrace(slot: Slot): void {
    if (slot.graceTimer) clearTimeout(slot.graceTimer)
    slot.graceTimer = null
  }

  async #unload(slot: Slot): Promise<void> {
    const loaded = slot.loaded
    if (!loaded) return
    try {
      await loaded.writer.flush()
    } catch {
      // Keep the room (and its unsaved changes) in memory; the writer retries and so do we.
      slot.unloading = null
      if (slot.holders === 0) this.#startGrace(slot, this.options.snapshot.retryMaxMs)
      return
    }
    await this.#free(slot)
  }

  async #free(slot: Slot): Promise<void> {
    const loaded = slot.loaded
    if (!loaded || this.#slots.get(slot.name) !== slot) return
    this.#cancelGrace(slot)
    loaded.writer.stop()
    this.#slots.delete(slot.name)
    const { registry, pubsub, metrics, metadata, logger } = this.deps
    await Promise.all([
      registry
        .deregister(slot.name)
        .catch((err) => logger.warn({ err, room: slot.name }, 'deregister failed')),
      pubsub
        .unsubscribe(slot.name)
        .catch((err) => logger.warn({ err, room: slot.name }, 'unsubscribe failed')),
    ])
    const bytes = loaded.room.approximateBytes
    loaded.room.destroy()
    loaded.writer.forget()
    this.deps.metrics.outOfSpace('journal', slot.name, false)
    slot.loaded = null
    metrics.rooms.dec()
    metadata.record({ type: 'room-unloaded', room: slot.name, bytes })
    logger.info({ room: slot.name }, 'room unloaded')
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

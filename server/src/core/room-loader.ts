import type * as Y from 'yjs'
import { RoomMovedError } from '../errors.js'
import type { JournalContents } from '../ports/update-journal.js'
import { newDoc } from '../protocol/new-doc.js'
import { AppMessageQuota } from './app-message-quota.js'
import { AppPersistence } from './app-persistence.js'
import { applyInSlices, replayInTurns } from './apply-in-slices.js'
import { LoadReservation } from './document-memory.js'
import { incarnationKey } from './incarnation.js'
import { UNBOUNDED_MEMORY } from './memory-budget.js'
import { BuildPace, type RetryLater, roomKey } from './pacing.js'
import { Room } from './room.js'
import type { RoomClaims } from './room-claims.js'
import { type JournalOutcomes, RoomJournal } from './room-journal.js'
import type { RoomLife } from './room-life.js'
import type { RoomManagerDeps, RoomManagerOptions } from './room-manager-options.js'
import { timedWait } from './room-waits.js'
import { serverSender } from './server-sender.js'
import { SnapshotWriter } from './snapshot-writer.js'

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

export interface Loaded {
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

/** What the loader shares with the room manager. */
export interface RoomLoaderContext {
  deps: RoomManagerDeps
  options: RoomManagerOptions
  claims: RoomClaims
  /** The longest an app's hook may take. */
  hookTimeoutMs: number
  /** Told how each room's journal writes end. */
  journalOutcomes: JournalOutcomes
  /** Where a shed room's clients are told to wait. */
  retryLater: RetryLater
  /** A later owner fenced this server's writes of the room at `epoch`. */
  onFenced(life: RoomLife<Loaded>, epoch: number, error: unknown): void
}

/**
 * Builds a room this server has just claimed: fences its journal, reads its state and journal,
 * applies them, and assembles the `Room` with its journal and snapshot writer (the `load` step of
 * each `RoomLife`). It owns what every room of the server shares: the app's persistence, the pace
 * of builds and the app messages' quota.
 */
export class RoomLoader {
  /** The app's persistence beside the stores (`onLoad`, `onStore`). */
  readonly #app: AppPersistence
  /** What each user's app messages being handled hold, across the rooms. */
  readonly #appMessageQuota: AppMessageQuota
  readonly #buildPace = new BuildPace()

  constructor(private readonly context: RoomLoaderContext) {
    const { deps } = context
    this.#appMessageQuota = new AppMessageQuota(deps.memory ?? UNBOUNDED_MEMORY)
    this.#app = new AppPersistence({
      hooks: deps.hooks ?? {},
      timeoutMs: context.hookTimeoutMs,
      logger: deps.logger,
    })
  }

  get #deps(): RoomManagerDeps {
    return this.context.deps
  }

  get #options(): RoomManagerOptions {
    return this.context.options
  }

  /**
   * Claims the room, fences its journal at the epoch, then reads it: what an earlier owner
   * confirmed is in the read, and it confirms nothing more. Fails (`RoomMovedError`) when another
   * server owns the room, or (retried while its clients wait) when the registry does not answer
   * in time: serving a room no one owns could give it two owners.
   */
  async load(life: RoomLife<Loaded>): Promise<Loaded> {
    const { name } = life
    const { registry, stateSource, logger, metrics } = this.#deps
    let created: Loaded | null = null
    // The documents' share, reserved as the state is applied (each load against the others).
    const loading = new LoadReservation(this.#deps.memory ?? UNBOUNDED_MEMORY)
    const claimed = timedWait(metrics.observeLoadWait, 'registry', () => this.context.claims.claim(name))
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
        await this.#deps.journal.fence(incarnationKey(name, incarnation.generation), fencedAt)
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
      this.#deps.events.emit({ type: 'room.loaded', room: name, source, bytes, at: Date.now() })
      return loaded
    } catch (error) {
      loading.release()
      // Built and never handed out: its timers and its charge to the memory budget go with it.
      created?.writer.stop()
      created?.room.destroy()
      await this.context.claims.release(name, epoch)
      throw error
    }
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
    const { metrics, logger } = this.#deps
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
        : { epoch: fencedAt, onStale: (error: unknown) => this.context.onFenced(life, fencedAt, error) }
    const { snapshots, journal, metrics, events, logger } = this.#deps
    const key = incarnationKey(name, generation)
    let changedAt: number | undefined
    const roomJournal = new RoomJournal({
      journal,
      room: name,
      key,
      replayed: { position: replayed, updates: from.replayedUpdates },
      outcomes: this.context.journalOutcomes,
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
        this.context.retryLater.refused(roomKey(name))
        life.unloadWhenFree()
      },
      name,
      doc,
      loadedBytes,
      loadedBuiltBytes,
      options: this.#options,
      journal: roomJournal,
      logger,
      onChange: () => writer?.markDirty(),
      observer: metrics,
      events,
      memory: this.#deps.memory,
      hooks: {
        ...this.#deps.hooks,
        timeoutMs: this.context.hookTimeoutMs,
        serverSender: serverSender(this.#options.serverId ?? 'server'),
        appMessageQuota: this.#appMessageQuota,
      },
      buildPace: this.#buildPace,
      mailbox: life.mailbox,
    })
    writer = new SnapshotWriter({
      room,
      store: snapshots,
      journal: roomJournal,
      policy: this.#options.snapshot,
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
}

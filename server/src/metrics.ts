import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { CoreMetrics, MessageKind } from './core/core-metrics.js'
import { MEMORY_KINDS, type MemoryBudget } from './core/memory-budget.js'
import type { JoinWaitObserver, LoadWaitObserver } from './core/room-waits.js'
import { DependencyHealth } from './dependency-health.js'
import { HotHistogram } from './hot-histogram.js'
import { LatencyWindow } from './latency-window.js'
import { ALARM_METRICS as NAMES, REGISTRY_ERROR_ACTIONS } from './metric-names.js'
import type { MetadataSinkStats } from './ports/metadata-sink.js'

/** What the build is, for `symphony_build_info`. */
export interface BuildInfo {
  version: string
  /** The source commit (`SYMPHONY_COMMIT` or `GIT_COMMIT`), or "unknown". */
  commit: string
}

/**
 * Every Prometheus metric the server exports, on a registry of its own so several servers can
 * live in one process (tests) without sharing counters.
 */
/** A bounded queue's state. */
interface QueueStats {
  queued: number
  dropped: number
}

export class ServerMetrics implements CoreMetrics {
  readonly registry = new Registry()
  readonly #updateHandling = new HotHistogram(
    NAMES.updateHandlingSeconds,
    "From a document update's arrival (from a client, here or relayed) to its write to the other local sockets",
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    this.registry,
  )
  readonly #recentUpdates = new LatencyWindow()
  readonly #messagesByType: Record<MessageKind, number> = {
    'sync-step1': 0,
    'sync-step2': 0,
    update: 0,
    awareness: 0,
    'query-awareness': 0,
    auth: 0,
    'sync-status': 0,
    broadcast: 0,
    app: 0,
    unknown: 0,
  }
  readonly #registryErrors = this.#counter(
    NAMES.registryErrors,
    'Failed room registry operations, by action',
    ['action'],
  )
  readonly #heartbeatsMissed = this.#counter(
    'symphony_dependency_heartbeats_missed_total',
    'Heartbeats a Redis connection missed (each declares it down and reopens it), by dependency',
    ['dependency'],
  )
  /** Every dependency's latest outcome: `/healthz` and `symphony_dependency_up`. */
  readonly dependencies = new DependencyHealth((dependency, action) => {
    if (action === 'heartbeat') this.#heartbeatsMissed.labels(dependency).inc()
    if (dependency === 'registry') this.#registryErrors.labels(action).inc()
  })
  readonly connections = this.#gauge('symphony_connections', 'Open WebSocket connections')
  readonly rooms = this.#gauge('symphony_rooms', 'Rooms loaded in memory')
  readonly connectionsRefused = this.#counter(
    'symphony_connections_refused_total',
    'Connections refused before or right after the upgrade, by reason',
    ['reason'],
  )
  readonly connectionsClosed = this.#counter(
    'symphony_connections_closed_by_server_total',
    'Connections the server closed, by close code name',
    ['code'],
  )
  // Counted on every frame: plain numbers, read by Prometheus only when scraped.
  readonly messagesReceived = this.#tally('symphony_messages_received_total', 'WebSocket messages received')
  readonly bytesReceived = this.#tally('symphony_bytes_received_total', 'Bytes received from clients')
  readonly messagesSent = this.#tally('symphony_messages_sent_total', 'WebSocket messages sent to clients')
  readonly bytesSent = this.#tally('symphony_bytes_sent_total', 'Bytes sent to clients')
  readonly writesDenied = this.#counter(
    'symphony_writes_denied_total',
    'Document updates refused because the connection is read-only',
  )
  readonly snapshots = this.#counter('symphony_snapshots_total', 'Snapshots saved')
  readonly snapshotFailures = this.#counter(
    'symphony_snapshot_failures_total',
    'Snapshot writes that failed (each is retried)',
  )
  readonly snapshotConflicts = this.#counter(
    'symphony_snapshot_conflicts_total',
    "Snapshot saves refused because another save came first (an earlier owner's, late): merged, then saved again",
  )
  readonly snapshotDuration = new Histogram({
    name: 'symphony_snapshot_duration_seconds',
    help: 'Time to encode and save one snapshot',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  })
  readonly journalReplayed = this.#counter(
    'symphony_journal_replayed_updates_total',
    'Journaled updates applied on top of a snapshot when a room loaded (a crash left them unsaved)',
  )
  readonly journalSkipped = this.#counter(
    'symphony_journal_skipped_records_total',
    'Damaged journal records skipped at replay (unreadable, or not an update that applies); the records after them still replay',
  )
  /** 1 while some room's latest write to that store failed for lack of space (ENOSPC, EDQUOT). */
  readonly storageFull = new Gauge({
    name: 'symphony_storage_full',
    help: "Whether some room's latest write to a store (snapshots, journal) failed because the disk is full",
    labelNames: ['store'],
    registers: [this.registry],
  })
  readonly #outOfSpace = { snapshots: new Set<string>(), journal: new Set<string>() }

  /**
   * Records whether `room`'s latest write to `store` failed for lack of space. The gauge stays 1
   * while any room's does: another room's small write succeeding says nothing about the disk.
   */
  outOfSpace(store: 'snapshots' | 'journal', room: string, full: boolean): void {
    const rooms = this.#outOfSpace[store]
    if (full) rooms.add(room)
    else if (!rooms.delete(room)) return // the common case: it was not, and still is not
    this.storageFull.labels(store).set(rooms.size > 0 ? 1 : 0)
  }
  readonly journalFailures = this.#counter(
    'symphony_journal_failures_total',
    'Journal appends and trims that failed, by action (appended updates still reach the next snapshot)',
    ['action'],
  )
  readonly roomLoads = this.#counter(
    'symphony_room_loads_total',
    'Rooms loaded, by where their state came from (peer, snapshot, empty)',
    ['source'],
  )
  readonly roomLoadFailures = this.#counter(
    'symphony_room_load_failures_total',
    'Room loads given up: failed with nobody left waiting for the room (or deleted meanwhile)',
  )
  readonly roomLoadRetries = this.#counter(
    'symphony_room_load_retries_total',
    'Room load attempts that failed and were tried again, since clients still waited',
  )
  readonly roomClaims = this.#counter(
    'symphony_room_claims_total',
    'Ownership claims made by room loads, by outcome (owned: this server owns the room now; elsewhere: another server does; failed: the registry did not answer)',
    ['outcome'],
  )
  readonly fencedWrites = this.#counter(
    'symphony_fenced_writes_total',
    'Rooms stopped here because a write was refused as stale: a later owner took the room (its clients were closed to reach it)',
  )
  readonly #loadWaits = new Histogram({
    name: 'symphony_room_load_wait_seconds',
    help: "How long each call of a room's load waited on a dependency (registry, snapshots, journal)",
    labelNames: ['dependency'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  })
  /** One call of a room's load waited `seconds` on `dependency`. */
  readonly observeLoadWait: LoadWaitObserver = (dependency, seconds) =>
    this.#loadWaits.labels(dependency).observe(seconds)
  readonly #joinWaiting = this.#gauge(
    'symphony_join_waiting',
    'Clients connected and waiting for their room to load',
  )
  readonly #joinWaits = new Histogram({
    name: 'symphony_join_wait_seconds',
    help: 'How long each client waited for its room to load before it joined',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  })
  readonly #joinWaitsExpired = this.#counter(
    'symphony_join_waits_expired_total',
    'Clients closed (1013) because their room did not load within JOIN_WAIT_MS',
  )
  /** What `admit` reports of each client's wait for its room. */
  readonly joinWaits: JoinWaitObserver = {
    started: () => this.#joinWaiting.inc(),
    ended: (outcome, seconds) => {
      this.#joinWaiting.dec()
      if (outcome === 'joined') this.#joinWaits.observe(seconds)
      else if (outcome === 'expired') this.#joinWaitsExpired.inc()
    },
  }

  /** Reports the metadata sink's queue (a slow or absent database shows here first). */
  watchMetadata(stats: () => MetadataSinkStats): void {
    this.#watchQueue(stats, {
      queue: ['symphony_metadata_queue_length', 'Metadata events waiting to be written to the database'],
      dropped: [
        'symphony_metadata_events_dropped_total',
        'Metadata events dropped because the queue was full (database slow or unreachable)',
      ],
    })
  }

  /** Reports the webhook sender's queue (a slow or absent receiver shows here first). */
  watchWebhooks(stats: () => QueueStats): void {
    this.#watchQueue(stats, {
      queue: [
        'symphony_webhooks_queue_length',
        'Webhook events held: waiting, in flight, or waiting for a retry',
      ],
      dropped: [
        'symphony_webhooks_dropped_total',
        'Webhook events dropped because the queue was full (the receiver slow or unreachable)',
      ],
    })
  }

  /** A bounded queue's length (a gauge) and what it dropped (a counter), read when scraped. */
  #watchQueue(stats: () => QueueStats, names: { queue: [string, string]; dropped: [string, string] }): void {
    new Gauge({
      name: names.queue[0],
      help: names.queue[1],
      registers: [this.registry],
      collect() {
        this.set(stats().queued)
      },
    })
    new Counter({
      name: names.dropped[0],
      help: names.dropped[1],
      registers: [this.registry],
      collect() {
        this.reset()
        this.inc(stats().dropped)
      },
    })
  }

  constructor(build: BuildInfo = { version: 'unknown', commit: 'unknown' }) {
    // Process CPU/memory, GC and event-loop lag (nodejs_eventloop_lag_*).
    collectDefaultMetrics({ register: this.registry })
    const { registry } = this
    // Every series exists from start, so an alarm on a rate sees 0 rather than missing data.
    for (const action of REGISTRY_ERROR_ACTIONS) this.#registryErrors.labels(action).inc(0)
    this.#heartbeatsMissed.labels('journal').inc(0)
    for (const store of ['journal', 'snapshots']) this.storageFull.labels(store).set(0)
    const recent = this.#recentUpdates
    new Gauge({
      name: NAMES.updateHandlingP99Seconds,
      help: `p99 of ${NAMES.updateHandlingSeconds} over the updates of the last 60 s (0 when none)`,
      registers: [registry],
      collect() {
        this.set(recent.quantile(0.99))
      },
    })
    const byType = this.#messagesByType
    new Counter({
      name: NAMES.messagesReceivedByType,
      help: 'Client frames handled, by wire message type (unknown: could not be decoded)',
      labelNames: ['type'],
      registers: [registry],
      collect() {
        this.reset()
        for (const [type, count] of Object.entries(byType)) this.labels(type).inc(count)
      },
    })
    const health = this.dependencies
    new Gauge({
      name: NAMES.dependencyUp,
      help: "1 while the dependency's latest operation succeeded, 0 while failing",
      labelNames: ['dependency'],
      registers: [registry],
      collect() {
        for (const [dependency, state] of Object.entries(health.report())) {
          this.labels(dependency).set(state.ok ? 1 : 0)
        }
      },
    })
    new Gauge({
      name: NAMES.buildInfo,
      help: 'Always 1; the labels say what runs',
      labelNames: ['version', 'node', 'commit'],
      registers: [registry],
    })
      .labels(build.version, process.version, build.commit)
      .set(1)
  }

  /** A client frame of this type arrived (hot path: one addition). */
  messageReceived(kind: MessageKind): void {
    this.#messagesByType[kind]++
  }

  /** An update that arrived at `receivedAt` (`performance.now()`) was written to the local sockets. */
  updateHandled(receivedAt: number): void {
    const now = performance.now()
    const seconds = (now - receivedAt) / 1000
    this.#updateHandling.observe(seconds)
    this.#recentUpdates.record(seconds, now)
  }

  /** The memory budget: its limit, and what each kind of use holds now, read at scrape time. */
  watchMemoryBudget(budget: MemoryBudget): void {
    new Gauge({
      name: 'symphony_memory_budget_bytes',
      help: 'What clients make the server hold, by kind (unsent, waiting, big-update, presence); see symphony_memory_budget_limit_bytes',
      labelNames: ['kind'],
      registers: [this.registry],
      collect() {
        for (const kind of MEMORY_KINDS) this.labels(kind).set(budget.usedBy(kind))
      },
    })
    this.#gauge(
      'symphony_memory_budget_limit_bytes',
      'MEMORY_BUDGET_BYTES: past it, the connections holding the most are closed (4013) and big updates refused',
    ).set(budget.limitBytes)
  }

  /**
   * `symphony_rooms_relayed` and `symphony_connections_relayed`: the rooms whose clients here are
   * relayed to the server that owns them, and those clients. `symphony_connections` counts the
   * sessions of the rooms this server owns (its own clients and those relayed to it), so a
   * server's open client sockets are its own clients plus these.
   */
  watchRelayed(relayed: { readonly relayedRooms: number; readonly relayedConnections: number }): void {
    new Gauge({
      name: 'symphony_rooms_relayed',
      help: 'Rooms whose clients on this server are relayed to the server that owns them (no copy here)',
      registers: [this.registry],
      collect() {
        this.set(relayed.relayedRooms)
      },
    })
    new Gauge({
      name: 'symphony_connections_relayed',
      help: 'Client connections on this server relayed to the server that owns their room',
      registers: [this.registry],
      collect() {
        this.set(relayed.relayedConnections)
      },
    })
  }

  /** Journaled updates no saved snapshot holds yet, read at scrape time. */
  watchJournalBacklog(backlog: () => number): void {
    new Gauge({
      name: NAMES.journalBacklogUpdates,
      help: 'Journaled updates that no saved snapshot holds yet, over the rooms of this server',
      registers: [this.registry],
      collect() {
        this.set(backlog())
      },
    })
  }

  #counter<Label extends string = never>(name: string, help: string, labelNames: readonly Label[] = []) {
    return new Counter<Label>({ name, help, labelNames, registers: [this.registry] })
  }

  #tally(name: string, help: string): Tally {
    const tally = new Tally()
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.reset()
        this.inc(tally.value)
      },
    })
    return tally
  }

  #gauge(name: string, help: string) {
    return new Gauge({ name, help, registers: [this.registry] })
  }
}

/** A counter for the hot path: an increment is one addition; its Prometheus twin reads it at scrape time. */
export class Tally {
  value = 0

  inc(by = 1): void {
    this.value += by
  }
}

import type { DependencyOutcomes } from '../ports/dependency-outcomes.js'
import type { Message } from '../protocol/codec.js'
import type { JoinWaitObserver, LoadWaitObserver } from './room-waits.js'

/** A client frame's wire type, as labelled in `/metrics`; `unknown`: it could not be decoded. */
export type MessageKind = Message['kind'] | 'unknown'

/** A count the core adds to. */
export interface Count {
  inc(by?: number): void
}

/**
 * What the core counts directly rather than through the event stream: the per-frame tallies on
 * the hot path (an event object per message would cost more than the count), and the few counts
 * that name no event of their own. The server's Prometheus metrics implement it
 * (`metrics.ts`); what the core emits as events, `observers/metrics-observer.ts` counts.
 */
export interface CoreMetrics {
  readonly messagesReceived: Count
  readonly bytesReceived: Count
  readonly messagesSent: Count
  readonly bytesSent: Count
  /** A client frame of this type arrived. */
  messageReceived(kind: MessageKind): void
  /** An update that arrived at `receivedAt` (`performance.now()`) was written to the local sockets. */
  updateHandled(receivedAt: number): void
  /** The server closed a connection; `code`: the close code's name. */
  readonly connectionsClosed: { labels(code: string): Count }
  /** A snapshot save met another save first (an earlier owner's, late): merged, then saved again. */
  readonly snapshotConflicts: Count
  readonly journalReplayed: Count
  readonly journalSkipped: Count
  readonly roomLoadFailures: Count
  readonly roomLoadRetries: Count
  /** A load claimed its room: `owned` (this server owns it now), `elsewhere`, or `failed`. */
  readonly roomClaims: { labels(outcome: 'owned' | 'elsewhere' | 'failed'): Count }
  /** A room's write was refused as stale (a later owner took it), so it stopped here. */
  readonly fencedWrites: Count
  readonly observeLoadWait: LoadWaitObserver
  readonly joinWaits: JoinWaitObserver
  readonly dependencies: DependencyOutcomes
  /** Whether `room`'s latest write to `store` failed for lack of space. */
  outOfSpace(store: 'snapshots' | 'journal', room: string, full: boolean): void
}

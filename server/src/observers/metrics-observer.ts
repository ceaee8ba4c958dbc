import type { ServerEvents } from '../core/server-events.js'
import type { ServerMetrics } from '../metrics.js'

/**
 * Counts what the event stream reports in `/metrics`: connections and rooms, refusals, snapshot
 * saves and failures, journal failures. The per-frame counts are not events: the core adds to
 * them directly (`CoreMetrics`).
 */
export function observeMetrics(events: ServerEvents, metrics: ServerMetrics): void {
  events.on('connection.joined', () => metrics.connections.inc())
  events.on('connection.left', () => metrics.connections.dec())
  events.on('connection.refused', ({ code }) => metrics.connectionsRefused.labels(code).inc())
  events.on('room.loaded', ({ source }) => {
    metrics.roomLoads.labels(source).inc()
    metrics.rooms.inc() // every loaded room unloads once, which counts it out
  })
  events.on('room.unloaded', ({ room }) => {
    metrics.outOfSpace('journal', room, false)
    metrics.outOfSpace('snapshots', room, false) // gone from this server: no longer one that cannot be saved
    metrics.rooms.dec()
  })
  events.on('update.refused', ({ code }) => {
    if (code === 'READ_ONLY') metrics.writesDenied.inc()
  })
  events.on('snapshot.saved', ({ room, seconds }) => {
    metrics.snapshots.inc()
    metrics.snapshotDuration.observe(seconds)
    metrics.dependencies.succeeded('snapshots')
    metrics.outOfSpace('snapshots', room, false)
  })
  events.on('snapshot.failed', ({ room, error, outOfSpace }) => {
    metrics.snapshotFailures.inc()
    metrics.dependencies.failed('snapshots', 'save', error)
    if (outOfSpace) metrics.outOfSpace('snapshots', room, true)
  })
  events.on('journal.failed', ({ room, action, error, outOfSpace }) => {
    metrics.journalFailures.labels(action).inc()
    metrics.dependencies.failed('journal', action, error)
    if (outOfSpace) metrics.outOfSpace('journal', room, true)
  })
}

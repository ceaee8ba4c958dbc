import { CloseCode, closeCodeName } from '@symphony/client/wire'
import type { ServerMetrics } from './metrics.js'
import type { ServerSample } from './ports/metadata-sink.js'

/**
 * Closes that are not errors: a normal close, the server going away (shutdown), a room deleted by
 * an operator, and an expired token (the client reconnects with a fresh one).
 */
const ROUTINE_CLOSES: ReadonlySet<string> = new Set(
  [CloseCode.Normal, CloseCode.GoingAway, CloseCode.RoomDeleted, CloseCode.TokenExpired].map(closeCodeName),
)

/**
 * The server's load and running totals, from its Prometheus metrics and the process. "Errors"
 * are: connections the server closed with any other code (protocol errors, limits, internal
 * failures), snapshot writes that failed, journal appends or trims that failed, and rooms
 * whose state could not be loaded.
 */
export async function readServerSample(
  metrics: ServerMetrics,
  load: { connections: number; rooms: number },
): Promise<ServerSample> {
  const [closed, snapshotFailures, journalFailures, loadFailures] = await Promise.all([
    metrics.connectionsClosed.get(),
    metrics.snapshotFailures.get(),
    metrics.journalFailures.get(),
    metrics.roomLoadFailures.get(),
  ])
  const sum = (values: { value: number; labels: Record<string, unknown> }[], keep = (_: string) => true) =>
    values.reduce((total, v) => total + (keep(String(v.labels.code ?? '')) ? v.value : 0), 0)
  const cpu = process.cpuUsage()
  const memory = process.memoryUsage()
  return {
    cpuMicros: cpu.user + cpu.system,
    rssBytes: memory.rss,
    heapBytes: memory.heapUsed,
    connections: load.connections,
    rooms: load.rooms,
    messagesIn: metrics.messagesReceived.value,
    messagesOut: metrics.messagesSent.value,
    bytesIn: metrics.bytesReceived.value,
    bytesOut: metrics.bytesSent.value,
    errors:
      sum(closed.values, (code) => !ROUTINE_CLOSES.has(code)) +
      sum(snapshotFailures.values) +
      sum(journalFailures.values) +
      sum(loadFailures.values),
  }
}

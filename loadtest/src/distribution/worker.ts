import { type IntervalReport, Measures } from '../measurement/measures.js'
import type { Convergence, WorkerSummary } from '../measurement/worker-summary.js'
import { type Placement, type RoomPlan, RoomRun } from '../virtual-users/room-run.js'
import type { Protocol } from '../virtual-users/wire.js'
import type { Workload } from '../virtual-users/workloads.js'
import { startWarnings } from './start-warnings.js'

/** The rooms one process drives: the whole run locally, or one agent's share. */
export interface WorkerPlan {
  agent: string
  serverUrls: string[]
  placement?: Placement | undefined
  workload: Workload
  rooms: RoomPlan[]
  rampSeconds: number
  durationSeconds: number
  realClients: boolean
  protocol: Protocol
}

/** How long, after sending stops, edits still in flight may take to reach the observers. */
const DRAIN_TIMEOUT_MS = 10_000
const CONVERGENCE_BATCH = 25

/**
 * Ramps the rooms in evenly over `rampSeconds`, keeps them busy for `durationSeconds`, waits for
 * what is in flight, checks every room converged, and reports each second to `onInterval`.
 */
export async function runWorker(
  plan: WorkerPlan,
  onInterval: (report: IntervalReport) => void,
): Promise<WorkerSummary> {
  const measures = new Measures()
  const sockets = plan.rooms.length * (plan.workload.perRoom + 1)
  const warnings = startWarnings(sockets).map((warning) => `${plan.agent}: ${warning}`)
  for (const warning of warnings) console.error(`warning: ${warning}`)
  const settings = {
    serverUrls: plan.serverUrls,
    placement: plan.placement,
    workload: plan.workload,
    realClients: plan.realClients,
    protocol: plan.protocol,
  }
  const rooms = plan.rooms.map((room) => new RoomRun(room, { ...settings, measures }))
  const started = performance.now()
  const stopIntervals = reportEachSecond(plan.agent, measures, rooms, started, onInterval)

  const rampMs = plan.rampSeconds * 1000
  const starts = rooms.map(
    (room, i) =>
      new Promise<void>((resolve) => {
        setTimeout(() => room.start().then(resolve, resolve), (rampMs * i) / Math.max(1, rooms.length))
      }),
  )
  await Promise.all([...starts, delay(rampMs + plan.durationSeconds * 1000)])
  for (const room of rooms) room.stopSending()
  await drained(rooms, DRAIN_TIMEOUT_MS)

  const convergence: Convergence = { rooms: rooms.length, converged: 0, failures: [] }
  for (let i = 0; i < rooms.length; i += CONVERGENCE_BATCH) {
    const batch = rooms.slice(i, i + CONVERGENCE_BATCH)
    const verdicts = await Promise.all(batch.map((room) => room.divergence()))
    verdicts.forEach((reason, j) => {
      if (reason === null) convergence.converged++
      else convergence.failures.push({ room: batch[j]?.plan.name ?? '?', reason })
    })
  }
  const drops = { updates: 0, presence: 0 }
  for (const room of rooms) {
    const roomDrops = room.drops()
    drops.updates += roomDrops.updates
    drops.presence += roomDrops.presence
  }
  const users = joinedUsers(rooms)
  stopIntervals()
  await Promise.all(rooms.map((room) => room.close()))
  return {
    agent: plan.agent,
    rooms: rooms.length,
    users,
    drops,
    convergence,
    errors: [...measures.errorMessages],
    warnings,
  }
}

/** Emits an interval report every second, and a last one for the remainder when stopped. */
function reportEachSecond(
  agent: string,
  measures: Measures,
  rooms: RoomRun[],
  started: number,
  onInterval: (report: IntervalReport) => void,
): () => void {
  let second = 0
  let cpu = process.cpuUsage()
  let wall = performance.now()
  const emit = () => {
    const now = performance.now()
    const used = process.cpuUsage(cpu)
    const generatorCpuPercent = ((used.user + used.system) / 1000 / Math.max(1, now - wall)) * 100
    cpu = process.cpuUsage()
    wall = now
    second = Math.max(second + 1, Math.round((now - started) / 1000))
    onInterval(
      measures.takeInterval({ agent, second, usersConnected: joinedUsers(rooms), generatorCpuPercent }),
    )
  }
  const timer = setInterval(emit, 1000)
  return () => {
    clearInterval(timer)
    emit()
  }
}

/** Resolves once every observer has seen every edit sent to its room, or after `timeoutMs`. */
function drained(rooms: RoomRun[], timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timeout = setTimeout(resolve, timeoutMs)
    const check = () => {
      if (rooms.some((room) => room.outstandingUpdates() > 0)) return
      clearTimeout(timeout)
      resolve()
    }
    for (const room of rooms) room.onObservedUpdate(check)
    check()
  })
}

const joinedUsers = (rooms: RoomRun[]) => rooms.reduce((sum, room) => sum + room.connectedUsers, 0)

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

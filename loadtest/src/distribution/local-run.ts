import { Collector } from '../measurement/collector.js'
import { ServerSampler, serverStatsSource } from '../measurement/server-stats.js'
import type { WorkerSummary } from '../measurement/worker-summary.js'
import { planRooms, type RunSettings } from '../options.js'
import { showProgress } from '../reporting/outputs.js'
import type { Report } from '../reporting/report-schema.js'
import type { RoomPlan } from '../virtual-users/room-run.js'
import { withRoomTokens } from './tokens.js'
import { runWorker, type WorkerPlan } from './worker.js'

/** A run driven by this process alone. */
export function runLocal(settings: RunSettings): Promise<Report> {
  return measuredRun(settings, async (collector) => {
    const plan = await workerPlan(settings, 'local', planRooms(settings))
    return [await runWorker(plan, (interval) => collector.add(interval))]
  })
}

/**
 * What every run does around its workers, wherever they are: watch the server, show progress,
 * and turn what `drive` collected into the report.
 */
export async function measuredRun(
  settings: RunSettings,
  drive: (collector: Collector) => Promise<WorkerSummary[]>,
): Promise<Report> {
  const collector = new Collector()
  const server = new ServerSampler(serverStatsSource(settings.urls, settings.serverPids))
  const startedAt = new Date()
  const started = performance.now()
  await server.start(started)
  const stopProgress = showProgress(settings, collector, server)
  try {
    const summaries = await drive(collector)
    await server.stop()
    return collector.report({ ...settings, startedAt }, summaries, server)
  } finally {
    stopProgress()
  }
}

/**
 * One worker's share of the run, with its users' tokens signed here: the plan carries tokens for
 * its rooms alone, valid until a little after the load's planned end, and never the secret.
 */
export async function workerPlan(
  settings: RunSettings,
  agent: string,
  rooms: RoomPlan[],
): Promise<WorkerPlan> {
  const validFor = settings.rampSeconds + settings.durationSeconds + settings.tokenMarginSeconds
  return {
    agent,
    serverUrls: settings.urls,
    placement: settings.placement,
    workload: settings.workload,
    rooms: await withRoomTokens(rooms, settings.workload.perRoom, settings.tokenSecret, validFor),
    rampSeconds: settings.rampSeconds,
    durationSeconds: settings.durationSeconds,
    realClients: settings.realClients,
    protocol: settings.protocol,
  }
}

import { Collector } from './collector.js'
import { planRooms, type RunSettings } from './options.js'
import { showProgress } from './outputs.js'
import type { Report } from './report-schema.js'
import type { RoomPlan } from './room-run.js'
import { ServerSampler, serverStatsSource } from './server-stats.js'
import { runWorker, type WorkerPlan, type WorkerSummary } from './worker.js'

/** A run driven by this process alone. */
export function runLocal(settings: RunSettings): Promise<Report> {
  return measuredRun(settings, async (collector) => {
    const plan = workerPlan(settings, 'local', planRooms(settings))
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

export function workerPlan(settings: RunSettings, agent: string, rooms: RoomPlan[]): WorkerPlan {
  return {
    agent,
    serverUrls: settings.urls,
    workload: settings.workload,
    rooms,
    rampSeconds: settings.rampSeconds,
    durationSeconds: settings.durationSeconds,
    realClients: settings.realClients,
    protocol: settings.protocol,
    tokenSecret: settings.tokenSecret,
  }
}

import type { Histogram } from 'hdr-histogram-js'
import type { Report } from '../reporting/report-schema.js'
import type { Workload } from '../virtual-users/workloads.js'
import { addEncoded, newHistogram, summarize } from './histogram.js'
import {
  type Counters,
  freshHistograms,
  type IntervalReport,
  METRICS,
  type MetricName,
  zeroCounters,
} from './measures.js'
import { median } from './median.js'
import type { ServerSampler } from './server-stats.js'
import type { WorkerSummary } from './worker-summary.js'

interface Second {
  histograms: Record<MetricName, Histogram>
  /** Document and presence messages sent in this second. */
  sent: number
  users: Map<string, number>
  generatorCpu: Map<string, number>
}

export interface RunDescription {
  urls: string[]
  workload: Workload
  rampSeconds: number
  durationSeconds: number
  realClients: boolean
  startedAt: Date
}

/** Above this share of one core the generator, not the server, may be what limits the run. */
const GENERATOR_BUSY_PERCENT = 80
/** Seconds after the ramp before the steady state begins (a third of a shorter run): the joins' backlog drains first. */
const SETTLE_SECONDS = 3

/**
 * Adds up the interval reports of every worker (one locally, one per agent when distributed):
 * histograms are merged, never averaged, so percentiles stay exact across agents.
 */
export class Collector {
  readonly #total = freshHistograms()
  readonly #counters: Counters = zeroCounters()
  readonly #seconds = new Map<number, Second>()

  add(report: IntervalReport): void {
    const second = this.#second(report.second)
    for (const metric of METRICS) {
      addEncoded(this.#total[metric], report.histograms[metric])
      addEncoded(second.histograms[metric], report.histograms[metric])
    }
    for (const [name, value] of Object.entries(report.counters))
      this.#counters[name as keyof Counters] += value
    second.sent += report.counters.updatesSent + report.counters.presenceSent
    second.users.set(report.agent, report.usersConnected)
    second.generatorCpu.set(report.agent, report.generatorCpuPercent)
  }

  /** Each agent's readings of `field`, second by second. */
  #perAgent(field: 'users' | 'generatorCpu'): Map<string, number[]> {
    const readings = new Map<string, number[]>()
    for (const [, second] of [...this.#seconds].sort(([a], [b]) => a - b)) {
      for (const [agent, value] of second[field]) {
        const list = readings.get(agent) ?? []
        list.push(value)
        readings.set(agent, list)
      }
    }
    return readings
  }

  /** One line for the terminal: where the run is now. */
  progressLine(elapsedSeconds: number, totalSeconds: number, server: ServerSampler): string {
    const users = sum([...this.#perAgent('users').values()].map((readings) => readings.at(-1) ?? 0))
    const latest = this.#seconds.get(Math.max(0, ...this.#seconds.keys()))
    const p99 = (metric: MetricName) => (latest ? `${summarize(latest.histograms[metric]).p99}ms` : '-')
    const serverNow = server.samples.at(-1)
    const generator = latest ? Math.max(...latest.generatorCpu.values()) : 0
    return [
      `[${Math.round(elapsedSeconds)}s/${totalSeconds}s]`,
      `users ${users}`,
      `updates ${this.#counters.updatesSent} sent, p99 ${p99('update')}`,
      `presence p99 ${p99('presence')}`,
      `errors ${this.#counters.connectErrors + this.#counters.errors + this.#counters.unexpectedCloses}`,
      serverNow
        ? `server ${serverNow.cpuPercent.toFixed(0)}% cpu ${(serverNow.rssBytes / 2 ** 20).toFixed(0)} MiB`
        : 'server -',
      `generator ${generator.toFixed(0)}% cpu`,
    ].join(' · ')
  }

  report(run: RunDescription, summaries: WorkerSummary[], server: ServerSampler): Report {
    const warnings = summaries.flatMap((s) => s.warnings)
    const { workload } = run
    const users = workload.rooms * workload.perRoom
    const counts = this.#counters
    const delivered = (counts.updatesSent + counts.presenceSent) * (workload.perRoom - 1)
    const samples = server.samples
    const cpuSeconds =
      server.baseline && server.last ? Math.max(0, server.last.cpuSeconds - server.baseline.cpuSeconds) : null
    const rssMax = samples.length ? Math.max(...samples.map((s) => s.rssBytes)) : null
    const cpuByAgent = this.#perAgent('generatorCpu')
    const agents = summaries.map((summary) => {
      const cpu = cpuByAgent.get(summary.agent) ?? [0]
      return {
        agent: summary.agent,
        rooms: summary.rooms,
        users: summary.users,
        generatorCpuPercent: { mean: round(mean(cpu)), max: round(Math.max(...cpu)) },
      }
    })
    for (const agent of agents) {
      if (agent.generatorCpuPercent.mean > GENERATOR_BUSY_PERCENT) {
        warnings.push(
          `the generator ${agent.agent} used ${agent.generatorCpuPercent.mean}% of a core on average: it, not the server, may be the bottleneck (add agents)`,
        )
      }
    }
    const failures = summaries.flatMap((s) => s.convergence.failures)
    return {
      schema: 'symphony-loadtest-report/1',
      startedAt: run.startedAt.toISOString(),
      elapsedSeconds: round((Date.now() - run.startedAt.getTime()) / 1000),
      target: { url: run.urls.join(','), statsSource: server.kind },
      workload: {
        name: workload.name,
        source: workload.source,
        rooms: workload.rooms,
        perRoom: workload.perRoom,
        users,
        docRate: workload.docRate,
        presenceRate: workload.presenceRate,
        writers: workload.writers,
        edit: workload.edit,
        rampSeconds: run.rampSeconds,
        durationSeconds: run.durationSeconds,
        realClients: run.realClients,
      },
      agents,
      ...this.totals(),
      drops: {
        updates: sum(summaries.map((s) => s.drops.updates)),
        presence: sum(summaries.map((s) => s.drops.presence)),
      },
      convergence: {
        rooms: sum(summaries.map((s) => s.convergence.rooms)),
        converged: sum(summaries.map((s) => s.convergence.converged)),
        failures,
      },
      server: {
        cpuSeconds: cpuSeconds === null ? null : round(cpuSeconds),
        cpuPercent: {
          mean: samples.length ? round(mean(samples.map((s) => s.cpuPercent))) : null,
          max: samples.length ? round(Math.max(...samples.map((s) => s.cpuPercent))) : null,
        },
        rssBytes: {
          baseline: server.baseline?.rssBytes ?? null,
          max: rssMax,
          end: server.last?.rssBytes ?? null,
        },
        deliveredMessages: delivered,
        cpuMicrosecondsPerDeliveredMessage:
          cpuSeconds !== null && delivered > 0 ? round((cpuSeconds * 1e6) / delivered) : null,
        rssBytesPerUser:
          rssMax !== null && server.baseline ? Math.round((rssMax - server.baseline.rssBytes) / users) : null,
      },
      steady: this.#steady(run, server),
      timeline: this.timeline(samples),
      warnings,
      errors: [...new Set(summaries.flatMap((s) => s.errors))].slice(0, 50),
      thresholds: [],
    }
  }

  /** Latency over the whole run, from the merged histograms, and every counter summed. */
  totals(): Pick<Report, 'latency' | 'counts'> {
    return {
      latency: {
        connect: summarize(this.#total.connect),
        update: summarize(this.#total.update),
        presence: summarize(this.#total.presence),
      },
      counts: { ...this.#counters },
    }
  }

  /** The figures of the seconds between the end of the ramp (plus a settling pause) and the end of the load. */
  #steady(run: RunDescription, server: ServerSampler): Report['steady'] {
    const settle = Math.min(SETTLE_SECONDS, Math.floor(run.durationSeconds / 3))
    const fromSecond = Math.ceil(run.rampSeconds) + settle
    const toSecond = Math.ceil(run.rampSeconds + run.durationSeconds)
    const inWindow = (second: number) => second > fromSecond && second <= toSecond
    const update = newHistogram()
    const presence = newHistogram()
    let sent = 0
    for (const [index, second] of this.#seconds) {
      if (!inWindow(index)) continue
      update.add(second.histograms.update)
      presence.add(second.histograms.presence)
      sent += second.sent
    }
    const samples = server.samples.filter((s) => inWindow(s.second))
    const cpuSeconds = sum(samples.map((s) => s.cpuPercent)) / 100
    // Each sample covers about one second, as do the sent counts: both sum over the same window.
    const delivered = sent * (run.workload.perRoom - 1)
    const users = run.workload.rooms * run.workload.perRoom
    const rss = median(samples.map((s) => s.rssBytes))
    // Above the lowest the processes' RSS went during the run: read once after start-up, the
    // baseline can hold start-up garbage a collection frees once load begins (npm start's steady
    // median fell below it, and its RSS per user read 0).
    const floor = server.baseline
      ? Math.min(server.baseline.rssBytes, ...server.samples.map((s) => s.rssBytes))
      : null
    const steady = {
      fromSecond,
      toSecond,
      latency: { update: summarize(update), presence: summarize(presence) },
      cpuMicrosecondsPerDeliveredMessage:
        samples.length && delivered > 0 ? round((cpuSeconds * 1e6) / delivered) : null,
      rssBytesPerUser: rss !== null && floor !== null ? Math.round(Math.max(0, rss - floor) / users) : null,
    }
    update.destroy()
    presence.destroy()
    return steady
  }

  /** Each second of the run: every agent's histograms for that second merged, and the server's reading. */
  timeline(samples: ServerSampler['samples']): Report['timeline'] {
    const bySecond = new Map(samples.map((s) => [s.second, s]))
    return [...this.#seconds.entries()]
      .sort(([a], [b]) => a - b)
      .map(([second, entry]) => {
        const latency = Object.fromEntries(
          METRICS.map((metric) => {
            const { count, p50, p99 } = summarize(entry.histograms[metric])
            return [metric, { count, p50, p99 }]
          }),
        ) as Report['timeline'][number]['latency']
        const server = bySecond.get(second)
        return {
          second,
          users: sum([...entry.users.values()]),
          latency,
          generatorCpuPercent: round(Math.max(0, ...entry.generatorCpu.values())),
          serverCpuPercent: server ? round(server.cpuPercent) : null,
          serverRssBytes: server?.rssBytes ?? null,
        }
      })
  }

  #second(index: number): Second {
    let second = this.#seconds.get(index)
    if (!second) {
      second = { histograms: freshHistograms(), sent: 0, users: new Map(), generatorCpu: new Map() }
      this.#seconds.set(index, second)
    }
    return second
  }
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
const mean = (values: number[]) => (values.length ? sum(values) / values.length : 0)
const round = (value: number) => Math.round(value * 100) / 100

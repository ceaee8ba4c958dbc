import type { Histogram } from 'hdr-histogram-js'
import { encodeHistogram, newHistogram, recordMs } from './histogram.js'

export const METRICS = ['connect', 'update', 'presence'] as const
/** connect: socket opened until the server's sync step 2; update/presence: sender to observer. */
export type MetricName = (typeof METRICS)[number]

export const COUNTERS = [
  'connectAttempts',
  'connected',
  'connectErrors',
  'updatesSent',
  'updatesObserved',
  'presenceSent',
  'presenceObserved',
  'framesReceived',
  'bytesReceived',
  'errors',
  'unexpectedCloses',
] as const
export type CounterName = (typeof COUNTERS)[number]
export type Counters = Record<CounterName, number>

export const zeroCounters = (): Counters => Object.fromEntries(COUNTERS.map((name) => [name, 0])) as Counters

/** One second of one worker's measurements; the collector adds these up, whoever sent them. */
export interface IntervalReport {
  agent: string
  /** Seconds since the run started. */
  second: number
  histograms: Record<MetricName, string | null>
  counters: Counters
  usersConnected: number
  /** This generator process's CPU over the second, in % of one core. */
  generatorCpuPercent: number
}

const MAX_ERROR_MESSAGES = 20

/** A worker's measurements since the last interval, plus its first distinct error messages. */
export class Measures {
  #histograms = freshHistograms()
  #counters = zeroCounters()
  readonly errorMessages = new Set<string>()

  record(metric: MetricName, milliseconds: number): void {
    recordMs(this.#histograms[metric], milliseconds)
  }

  count(counter: CounterName, amount = 1): void {
    this.#counters[counter] += amount
  }

  error(counter: 'connectErrors' | 'errors' | 'unexpectedCloses', message: string): void {
    this.#counters[counter]++
    if (this.errorMessages.size < MAX_ERROR_MESSAGES) this.errorMessages.add(message)
  }

  takeInterval(fields: Omit<IntervalReport, 'histograms' | 'counters'>): IntervalReport {
    const histograms = this.#histograms
    const report: IntervalReport = {
      ...fields,
      histograms: {
        connect: encodeHistogram(histograms.connect),
        update: encodeHistogram(histograms.update),
        presence: encodeHistogram(histograms.presence),
      },
      counters: this.#counters,
    }
    for (const histogram of Object.values(histograms)) histogram.destroy()
    this.#histograms = freshHistograms()
    this.#counters = zeroCounters()
    return report
  }
}

export function freshHistograms(): Record<MetricName, Histogram> {
  return { connect: newHistogram(), update: newHistogram(), presence: newHistogram() }
}

import { execFileSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'

/** The server's CPU time used so far and its resident memory, at one moment. */
export interface ServerReading {
  cpuSeconds: number
  rssBytes: number
}

export interface ServerStatsSource {
  kind: 'proc' | 'metrics'
  read(): Promise<ServerReading | null>
}

/**
 * `/proc/<pid>` of the server's processes when on this machine (all of a cluster's: its servers
 * and Redis), else every server's Prometheus `/metrics`: CPU time and memory summed.
 */
export function serverStatsSource(serverUrls: string[], serverPids: number[]): ServerStatsSource {
  if (serverPids.length > 0) {
    const ticksPerSecond = clockTicks()
    return summed(
      'proc',
      serverPids.map((pid) => procReader(pid, ticksPerSecond)),
    )
  }
  return summed('metrics', serverUrls.map(metricsReader))
}

type Reader = () => Promise<ServerReading | null>

/** The sum of every reading; null unless all of them answer, so a sum never drops a process. */
function summed(kind: ServerStatsSource['kind'], readers: Reader[]): ServerStatsSource {
  return {
    kind,
    async read() {
      const readings = await Promise.all(readers.map((read) => read()))
      if (readings.some((reading) => reading === null)) return null
      return {
        cpuSeconds: readings.reduce((sum, r) => sum + (r?.cpuSeconds ?? 0), 0),
        rssBytes: readings.reduce((sum, r) => sum + (r?.rssBytes ?? 0), 0),
      }
    },
  }
}

function procReader(pid: number, ticksPerSecond: number): Reader {
  return async () => {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
      // Fields after the command name (which may hold spaces) start at field 3, "state".
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const cpuTicks = Number(fields[11]) + Number(fields[12]) // utime + stime
      const status = await readFile(`/proc/${pid}/status`, 'utf8')
      const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN)
      return { cpuSeconds: cpuTicks / ticksPerSecond, rssBytes: rssKb * 1024 }
    } catch {
      return null // the process is gone
    }
  }
}

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
}

function metricsReader(serverUrl: string): Reader {
  const url = new URL('/metrics', serverUrl.replace(/^ws/, 'http'))
  return async () => {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(5000) })
      if (!response.ok) return null
      const text = await response.text()
      const cpuSeconds = metric(text, 'process_cpu_seconds_total')
      const rssBytes = metric(text, 'process_resident_memory_bytes')
      return cpuSeconds === null || rssBytes === null ? null : { cpuSeconds, rssBytes }
    } catch {
      return null
    }
  }
}

/** A sample's value in a Prometheus text exposition (its first series), or null if absent. */
export function metric(text: string, name: string): number | null {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)`, 'm').exec(text)
  return match ? Number(match[1]) : null
}

export interface ServerSample {
  second: number
  cpuPercent: number
  rssBytes: number
}

/** Reads the server once a second; a source that never answers leaves the report's server figures empty. */
export class ServerSampler {
  readonly samples: ServerSample[] = []
  baseline: ServerReading | null = null
  last: ServerReading | null = null
  #timer: NodeJS.Timeout | null = null
  #lastAt = 0
  #reading = false
  /** The run's start, which sample seconds count from. */
  #started = 0

  constructor(private readonly source: ServerStatsSource) {}

  /** Where the figures came from; 'none' when the source never answered. */
  get kind(): 'proc' | 'metrics' | 'none' {
    return this.baseline ? this.source.kind : 'none'
  }

  /** Takes the baseline reading, then samples every second from `started`. */
  async start(started: number): Promise<void> {
    this.#started = started
    // A server busy for a moment (e.g. still starting) gets a few tries before it counts as silent.
    for (let attempt = 0; attempt < 3 && !this.baseline; attempt++) this.baseline = await this.source.read()
    this.last = this.baseline
    this.#lastAt = performance.now()
    if (!this.baseline) return
    this.#timer = setInterval(() => void this.#sample(), 1000)
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    if (this.baseline) await this.#sample()
  }

  async #sample(): Promise<void> {
    // A slow read must not overlap the next: the CPU share is over the time between readings.
    if (this.#reading) return
    this.#reading = true
    const reading = await this.source.read().finally(() => {
      this.#reading = false
    })
    const now = performance.now()
    if (!reading || !this.last) return
    const cpuPercent = ((reading.cpuSeconds - this.last.cpuSeconds) / ((now - this.#lastAt) / 1000)) * 100
    this.samples.push({
      second: Math.round((now - this.#started) / 1000),
      cpuPercent: Math.max(0, cpuPercent),
      rssBytes: reading.rssBytes,
    })
    this.last = reading
    this.#lastAt = now
  }
}

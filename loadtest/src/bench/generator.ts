import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Report } from '../reporting/report-schema.js'
import type { Placement } from '../virtual-users/room-run.js'

const CLI = fileURLToPath(new URL('../../bin/symphony-loadtest.js', import.meta.url))

export interface GeneratorRun {
  /** The servers, each room's users taking them in turn. */
  urls: string[]
  /** How a room's users are placed on several servers (`--placement`); spread unless set. */
  placement?: Placement | undefined
  /** The processes whose CPU and memory count as the server's: the servers, and Redis if any. */
  serverPids: number[]
  workload: string
  /** The servers' framing; y-websocket's unless set. */
  protocol?: string | undefined
  rooms: number
  perRoom?: string | undefined
  duration: string
  ramp: string
  /** Where the report goes; the HTML report lands beside it. */
  json: string
  /** Pin the generator to these CPUs with taskset. */
  cpus?: string | undefined
  roomPrefix?: string
}

/** After the ramp and the run: the drain, the convergence checks and the report. */
const WIND_DOWN_SECONDS = 90

/**
 * Runs the load generator as its own process and reads its JSON report. A server that falls so
 * far behind that the run cannot end in time is given up on (the generator is killed): rejects.
 */
export function runGenerator(run: GeneratorRun): Promise<Report> {
  const args = [
    CLI,
    ...['--url', run.urls.join(','), '--workload', run.workload, '--rooms', String(run.rooms)],
    ...['--duration', run.duration, '--ramp', run.ramp, '--server-pid', run.serverPids.join(',')],
    ...(run.perRoom ? ['--per-room', run.perRoom] : []),
    ...(run.protocol ? ['--protocol', run.protocol] : []),
    ...(run.placement ? ['--placement', run.placement] : []),
    ...(run.roomPrefix ? ['--room-prefix', run.roomPrefix] : []),
    ...['--json', run.json, '--html', run.json.replace(/json$/, 'html'), '--quiet'],
  ]
  const [command, commandArgs] = run.cpus
    ? ['taskset', ['-c', run.cpus, process.execPath, ...args]]
    : [process.execPath, args]
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs as string[], { stdio: ['ignore', 'ignore', 'inherit'] })
    const limitSeconds = Number(run.ramp) + Number(run.duration) + WIND_DOWN_SECONDS
    let overdue = false
    const timer = setTimeout(() => {
      overdue = true
      child.kill('SIGKILL')
    }, limitSeconds * 1000)
    child.on('close', (code) => {
      clearTimeout(timer)
      if (overdue)
        return reject(new Error(`the run did not end within ${limitSeconds} s (the server fell behind)`))
      if (code !== 0) return reject(new Error(`the load generator exited with ${code}`))
      resolve(JSON.parse(readFileSync(run.json, 'utf8')) as Report)
    })
  })
}

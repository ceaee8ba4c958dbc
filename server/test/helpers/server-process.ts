import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

export interface ServerProcess {
  child: ChildProcess
  port: number
  /** `host:port` of its internal endpoint, or null in single-server mode. */
  internalAddress: string | null
  /** Every log line so far, parsed. */
  logs: Record<string, unknown>[]
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Server processes still running: killed if the test process exits first (a failed or timed-out test). */
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/** Runs the built server (`server/dist/main.js`, as `npm start` does) and waits until it listens. */
export function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  // Embedded servers journal into ./data/journal by default: keep tests out of the working tree.
  const journal = env.PUBSUB ? {} : { JOURNAL: `file://${mkdtempSync(join(tmpdir(), 'symphony-journal-'))}` }
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', ...journal, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(child)
  child.once('exit', () => running.delete(child))
  const logs: Record<string, unknown>[] = []
  let stderr = ''
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  return new Promise((resolve, reject) => {
    let buffer = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString()
      const lines = buffer.split('\n')
      buffer = lines.pop() ?? ''
      for (const line of lines) {
        const entry = JSON.parse(line) as Record<string, unknown>
        logs.push(entry)
        if (entry.msg === 'listening') {
          const internalAddress = (entry.internalAddress as string | null) ?? null
          resolve({ child, port: entry.port as number, internalAddress, logs, exited })
        }
      }
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    exited.then(({ code }) => reject(new Error(`server exited with ${code} before listening: ${stderr}`)))
  })
}

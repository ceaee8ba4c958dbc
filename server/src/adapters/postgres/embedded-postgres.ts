import { fork } from 'node:child_process'
import type { EmbeddedPostgresMessage } from './embedded-postgres-process.js'

/** A running embedded database and the URL any `pg` client (ours, the dashboard's) uses for it. */
export interface EmbeddedPostgres {
  url: string
  /** The database's own process. */
  pid: number
  /** Settles when that process ends, whether stopped or not. */
  exited: Promise<void>
  stop(): Promise<void>
}

const START_TIMEOUT_MS = 60_000
const STOP_TIMEOUT_MS = 10_000

/**
 * Postgres without a Postgres install: PGlite keeping its files in `folder`, in a process of its
 * own (see embedded-postgres-process.ts), served over the Postgres wire protocol on
 * 127.0.0.1:`port` (0: any free port), so the very same `pg` code runs against it as against a
 * real server, and the sync server's event loop and memory never carry it.
 *
 * pglite-socket hands a NOTIFY only to the connection that sent it; the `NotifyRelay` in front
 * passes it on to the others, so the dashboard's LISTEN works as on a real server.
 */
export function startEmbeddedPostgres(folder: string, port: number): Promise<EmbeddedPostgres> {
  // Built code forks the built entry; under tsx (tests) the TypeScript one, with tsx's loader.
  const fromSource = import.meta.url.endsWith('.ts')
  const entry = new URL(`./embedded-postgres-process.${fromSource ? 'ts' : 'js'}`, import.meta.url)
  const child = fork(entry, [folder, String(port)], {
    execArgv: fromSource ? loaderArguments(process.execArgv) : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return new Promise((resolve, reject) => {
    const fail = (reason: string) => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(new Error(`embedded Postgres did not start: ${reason}`))
    }
    const timer = setTimeout(() => fail(`no answer within ${START_TIMEOUT_MS / 1000} s`), START_TIMEOUT_MS)
    child.once('error', (error) => fail(error.message))
    const exitedEarly = (code: number | null, signal: string | null) =>
      fail(`its process exited (${signal ?? code})`)
    child.once('exit', exitedEarly)
    child.once('message', (message: EmbeddedPostgresMessage) => {
      if ('error' in message) return fail(message.error)
      clearTimeout(timer)
      child.off('exit', exitedEarly)
      resolve({
        url: message.url,
        pid: child.pid ?? 0,
        exited,
        async stop() {
          if (child.exitCode !== null || child.signalCode !== null) return
          if (child.connected) child.disconnect()
          const killer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
          await exited
          clearTimeout(killer)
        },
      })
    })
  })
}

/** `--import tsx` and the like, without the test runner's own flags. */
function loaderArguments(execArgv: readonly string[]): string[] {
  const kept: string[] = []
  for (let i = 0; i < execArgv.length; i++) {
    const flag = execArgv[i] as string
    if (/^--(import|require|loader|experimental-loader)$/.test(flag)) kept.push(flag, execArgv[++i] as string)
    else if (/^--(import|require|loader|experimental-loader)=/.test(flag)) kept.push(flag)
  }
  return kept
}

import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'

/** The script the child runs: `saver-process-main.ts`, through tsx like the tests. */
const MAIN = new URL('./saver-process-main.ts', import.meta.url).pathname

export interface SaverProcess {
  child: ChildProcess
  /** An owner tag the child issued (`file-owner.ts`): names its files. */
  tag: string
  /** SIGKILLs it and waits until it is reaped, so its pid is free. */
  kill(): Promise<void>
}

/**
 * Another process saving snapshots into `folder` with the real `FileSnapshotStore`: it saves
 * `busyRoom` in a loop, holds `lockedRoom`'s lock as a saver does for its compare-and-rename
 * (and never lets go), and starts a save of `lockedRoom` that waits on it with its temporary file
 * written. Resolves once all three are under way, so a kill leaves what a saver killed mid-save
 * leaves.
 */
export async function startSaverProcess(
  folder: string,
  lockedRoom: string,
  busyRoom: string,
): Promise<SaverProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, folder, lockedRoom, busyRoom], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = once(child, 'exit')
  const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> })
  let tag = ''
  const waiting = new Set(['tag', 'locked', 'saved', 'waiting'])
  for await (const line of lines) {
    const event = JSON.parse(line) as { event: string; tag?: string }
    if (event.tag) tag = event.tag
    waiting.delete(event.event)
    if (waiting.size === 0) break
  }
  if (waiting.size > 0) throw new Error(`the saver process ended before ${[...waiting].join(', ')}`)
  return {
    child,
    tag,
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const CLI = fileURLToPath(new URL('../../bin/symphony-loadtest.js', import.meta.url))

export interface Finished {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the built CLI as a user would; `onStderr` sees each chunk as it comes. */
export function runCli(
  args: string[],
  onStderr?: (text: string) => void,
  cwd?: string,
  env?: NodeJS.ProcessEnv,
): { child: ChildProcess; done: Promise<Finished> } {
  const child = spawn(process.execPath, [CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd,
    env: { ...process.env, ...env },
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
    onStderr?.(stderr)
  })
  const done = new Promise<Finished>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  )
  return { child, done }
}

/** Starts `args` (a coordinator or `ecs` run) and resolves with the URL it listens on. */
export function startCoordinator(
  args: string[],
  env?: NodeJS.ProcessEnv,
  onStderr?: (text: string) => void,
  cwd?: string,
): { child: ChildProcess; done: Promise<Finished>; url: Promise<string> } {
  let listening: (url: string) => void = () => {}
  const url = new Promise<string>((resolve) => {
    listening = resolve
  })
  const run = runCli(
    args,
    (stderr) => {
      const found = /coordinator listening on (ws:\/\/\S+);/.exec(stderr)?.[1]
      if (found) listening(found)
      onStderr?.(stderr)
    },
    cwd,
    env,
  )
  return { ...run, url }
}

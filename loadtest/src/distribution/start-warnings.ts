import { readFileSync } from 'node:fs'

/** Warnings known before the run starts, such as too few file descriptors for its sockets. */
export function startWarnings(sockets: number): string[] {
  const limit = openFileLimit()
  if (limit === null || sockets + 64 <= limit) return []
  return [
    `ulimit -n is ${limit} here, and this run needs about ${sockets + 64} descriptors in one process: connections past the limit fail (raise it, or spread the rooms over agents)`,
  ]
}

function openFileLimit(): number | null {
  try {
    const limits = readFileSync('/proc/self/limits', 'utf8')
    const soft = /^Max open files\s+(\d+)/m.exec(limits)?.[1]
    return soft ? Number(soft) : null
  } catch {
    return null
  }
}

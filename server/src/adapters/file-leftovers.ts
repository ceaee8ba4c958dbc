import { readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { breakStaleLock } from './file-lock.js'
import { isOwnerGone } from './file-owner.js'

/** What a file store removes when it opens a folder, and when. */
export interface LeftoverRules {
  /** Temporary files (and renamed-away locks): the first group is the writer's owner tag, if any. */
  leftovers: RegExp
  /** A leftover whose writer is not provably gone is removed once it is older than this. */
  staleFileMs: number
  /** Lock files, removed by `breakStaleLock`'s rules (holder gone, or older than `staleMs`). */
  locks?: { names: RegExp; staleMs: number }
}

/** A lock whose holder may be alive (on another host, or untagged) is taken over after this long. */
export const DEFAULT_STALE_LOCK_MS = 30_000
/**
 * A temporary file whose writer may be alive is removed after this long: far longer than a write,
 * its sync and a wait for the room's lock take.
 */
export const DEFAULT_STALE_FILE_MS = 3_600_000

/**
 * Removes what writers killed mid-write left in `folder` (SIGKILL, an out-of-memory kill, a
 * power cut): temporary files and locks whose owner is provably gone (`file-owner.ts`), and those
 * past their age bound. Never a file a live writer may still use: another process sharing the
 * folder keeps its files until it is gone or they are older than the bound. Best effort: a file
 * that vanishes or cannot be removed is left for the next start.
 */
export async function sweepLeftovers(folder: string, rules: LeftoverRules): Promise<void> {
  const names = await readdir(folder).catch(() => [])
  for (const name of names) {
    const path = join(folder, name)
    try {
      if (rules.locks?.names.test(name)) {
        await breakStaleLock(path, rules.locks.staleMs)
        continue
      }
      const match = rules.leftovers.exec(name)
      if (!match) continue
      if (isOwnerGone(match[1] ?? '') || Date.now() - (await stat(path)).mtimeMs > rules.staleFileMs) {
        await rm(path, { force: true })
      }
    } catch {
      // Gone already, or not ours to remove (permissions): nothing to do now.
    }
  }
}

import { link, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { isOwnerGone, ownerTag } from './file-owner.js'

const LOCK_RETRY_MS = 5

/**
 * Runs `critical` holding the lock file `lock`, which holds this holder's owner tag
 * (`file-owner.ts`). The lock is made whole or not at all: the tag is written to a draft first
 * and the draft linked into place (failing when a lock is there), so a taker killed or out of
 * space mid-write never leaves an untagged lock that others would wait out for `staleMs`. A
 * holder removes the lock only while it still holds its own tag. A lock in the way is taken over
 * (`breakStaleLock`) at once when its holder is provably gone, else once it is older than
 * `staleMs`; otherwise the waiter retries every few milliseconds.
 */
export async function withFileLock<T>(lock: string, staleMs: number, critical: () => Promise<T>): Promise<T> {
  const tag = ownerTag()
  const draft = `${lock}.${tag}.tmp` // a leftover its owner's sweep removes, like a save's
  try {
    await writeFile(draft, tag, { flag: 'wx' })
    for (;;) {
      try {
        await link(draft, lock)
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        if (!(await breakStaleLock(lock, staleMs))) {
          await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS))
        }
      }
    }
  } finally {
    await rm(draft, { force: true })
  }
  try {
    return await critical()
  } finally {
    if ((await readFile(lock, 'utf8').catch(() => null)) === tag) await rm(lock, { force: true })
  }
}

/**
 * Removes `lock` when its holder is provably gone (a process of this host that no longer runs),
 * or when it is older than `staleMs` (a holder on another host sharing the folder, or a lock
 * without a tag: an older version's, or one cut short as it was created). It is renamed away
 * first, so only one of several takers wins; a taker that renamed a fresh lock (another taker's,
 * made in between) gives it back. True when the lock is gone: try to take it at once.
 */
export async function breakStaleLock(lock: string, staleMs: number): Promise<boolean> {
  let holder: string
  let seen: { ino: number; mtimeMs: number }
  try {
    const file = await open(lock, 'r')
    try {
      ;[holder, seen] = await Promise.all([file.readFile('utf8'), file.stat()])
    } finally {
      await file.close()
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true // released meanwhile
    throw error
  }
  if (!isOwnerGone(holder) && Date.now() - seen.mtimeMs <= staleMs) return false
  const stale = `${lock}.${ownerTag()}.stale`
  const taken = await rename(lock, stale).then(
    () => stat(stale),
    () => null, // another taker was first
  )
  if (!taken) return false
  if (taken.ino !== seen.ino) await link(stale, lock).catch(() => {})
  await rm(stale, { force: true })
  return true
}

import { createHash, randomBytes } from 'node:crypto'
import { readFileSync, readlinkSync } from 'node:fs'
import { hostname } from 'node:os'

/**
 * Who left a file in a shared folder (a temporary file, a lock), and whether that process is
 * provably gone. An owner tag, `<space>-<pid>-<boot>-<n>`, names the writing process:
 *
 * - `space`: a hash of where its pid means something: the host name, the kernel's boot id and the
 *   pid namespace. Two containers on one machine (or two machines with one host name) differ here,
 *   so a pid is only ever compared within the space it was taken in.
 * - `pid`, and `boot`: a random token per process, so this process tells its own files from those
 *   of an earlier process that had its pid (a restarted container's pid 1).
 * - `n`: counts this process's tags, so each temporary file and each lock holder has its own.
 *
 * Tags are short enough for file names (a room's file name is at most 200 bytes of the 255).
 */

/** The part of a file name an owner tag fills: nothing but `[0-9a-z-]`. */
const TAG = /^([0-9a-f]{12})-(\d{1,10})-([0-9a-f]{12})-[0-9a-z]{1,13}$/

const SPACE = createHash('sha256')
  .update([hostname(), readOr('/proc/sys/kernel/random/boot_id'), linkOr('/proc/self/ns/pid')].join('\0'))
  .digest('hex')
  .slice(0, 12)
const BOOT = randomBytes(6).toString('hex')
let issued = 0

/** A tag for a new file of this process's, never issued before. */
export function ownerTag(): string {
  issued++
  return `${SPACE}-${process.pid}-${BOOT}-${issued.toString(36)}`
}

/**
 * Whether the process that made `tag` is provably gone: it ran in this pid space and its pid is
 * free now (`kill(pid, 0)` finds no process), or its pid is this process's but the boot token
 * another's. Unknown (not a tag: an older version's file), another space, or a pid in use (alive,
 * or reused by another process): not provably gone; the caller falls back on the file's age.
 */
export function isOwnerGone(tag: string): boolean {
  const match = TAG.exec(tag)
  if (!match) return false
  const [, space, pidText, boot] = match
  if (space !== SPACE) return false
  const pid = Number(pidText)
  if (pid < 1) return false // kill(0) would signal this process group
  if (pid === process.pid) return boot !== BOOT
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    // EPERM: a process of another user has that pid; it exists.
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim()
  } catch {
    return '' // no /proc (macOS, Windows): the host name alone names the space
  }
}

function linkOr(path: string): string {
  try {
    return readlinkSync(path)
  } catch {
    return ''
  }
}

import { link, mkdir, readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { SnapshotVersion, SnapshotVersionPage } from '../ports/snapshot-store.js'
import { pageOfVersions } from './snapshot-versions.js'

/** A file version: `<inode>-<modification time in ns>-<size>` (`versionOf`). */
const FILE_VERSION = /^([0-9]{1,20})-([0-9]{1,30})-([0-9]{1,20})$/

/** A file's version: its identity, which a rename and a hard link both keep. */
export function versionOf(stats: { ino: bigint; mtimeNs: bigint; size: bigint }): string {
  return `${stats.ino}-${stats.mtimeNs}-${stats.size}`
}

/**
 * The file store's old versions of one room: hard links to the files a save or deletion replaced,
 * in `<room file>.versions/<version>.ybin`, at most `keep - 1` of them (the current file is the
 * newest version). A link costs no copy, and keeps the file's identity, so a version's id is the
 * version it had while current.
 */
export class FileSnapshotHistory {
  constructor(
    private readonly path: string,
    private readonly keep: number,
  ) {}

  /**
   * Keeps the current file, about to be replaced, as an old version (`version` is its version),
   * then drops the oldest past the bound. Called under the room's lock.
   */
  async keepReplaced(version: string | undefined): Promise<void> {
    if (version === undefined || this.keep <= 1) return
    await mkdir(this.#folder, { recursive: true })
    try {
      await link(this.path, this.fileOf(version) as string)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code !== 'EEXIST' && code !== 'ENOENT') throw error
    }
    const old = await this.#old()
    await Promise.all(old.slice(this.keep - 1).map((v) => rm(this.fileOf(v.id) as string, { force: true })))
  }

  /** The path of old version `id`, or null if `id` is no file version. */
  fileOf(id: string): string | null {
    return FILE_VERSION.test(id) ? join(this.#folder, `${id}.ybin`) : null
  }

  /** A page of the room's versions: `current` (null if no file) first, then the old ones. */
  async page(
    current: SnapshotVersion | null,
    options: { limit: number; cursor?: string | null },
  ): Promise<SnapshotVersionPage> {
    const old = await this.#old()
    const all = current && !old.some((v) => v.id === current.id) ? [current, ...old] : old
    // A cursor reads on from its time and inode, whether that version is still kept or not.
    return pageOfVersions(all, options, (cursor) => {
      const at = orderOf(cursor)
      return at && ((version) => compare(orderOf(version.id) ?? [0n, 0n], at) < 0)
    })
  }

  /** The old versions kept, newest first. */
  async #old(): Promise<SnapshotVersion[]> {
    const names = await readdir(this.#folder).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return []
      throw error
    })
    const ids = names.flatMap((name) => {
      const id = name.endsWith('.ybin') ? name.slice(0, -'.ybin'.length) : ''
      return FILE_VERSION.test(id) ? [id] : []
    })
    const versions = await Promise.all(
      ids.map(async (id): Promise<SnapshotVersion | null> => {
        const stats = await stat(this.fileOf(id) as string, { bigint: true }).catch(() => null)
        return stats && fileVersion(id, stats)
      }),
    )
    return versions
      .filter((v) => v !== null)
      .sort((a, b) => compare(orderOf(b.id) ?? [0n, 0n], orderOf(a.id) ?? [0n, 0n]))
  }

  get #folder(): string {
    return `${this.path}.versions`
  }
}

/** What a listing says of a file version. */
export function fileVersion(id: string, stats: { mtimeNs: bigint; size: bigint }): SnapshotVersion {
  return { id, savedAt: new Date(Number(stats.mtimeNs / 1_000_000n)), bytes: Number(stats.size) }
}

/** A version's place in time: its modification time, then its inode for ties. */
function orderOf(id: string): [bigint, bigint] | null {
  const match = FILE_VERSION.exec(id)
  return match ? [BigInt(match[2] as string), BigInt(match[1] as string)] : null
}

function compare(a: [bigint, bigint], b: [bigint, bigint]): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1
  return a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1
}

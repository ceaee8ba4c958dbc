import { randomUUID } from 'node:crypto'
import { type FileHandle, link, mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { SnapshotConflictError } from '../errors.js'
import type { SnapshotHead, SnapshotStore, StoredSnapshot } from '../ports/snapshot-store.js'
import { roomFilePath } from './room-files.js'
import { decodeSnapshotFile, encodeSnapshotFile, SNAPSHOT_FILE_HEADER_BYTES } from './snapshot-format.js'

/** A lock older than this belongs to a writer that died holding it. */
const STALE_LOCK_MS = 30_000
const LOCK_RETRY_MS = 5

/**
 * Embedded `SnapshotStore`: one `<room>.ybin` file per room in a folder, the name encoded by
 * `roomFileName` (no traversal, no case collisions, bounded length).
 *
 * A file's version is its identity (inode, modification time in nanoseconds, size): every save
 * renames a new file into place, so each saved version has its own. A save compares and renames
 * under a per-room lock file, so two savers never replace bytes unseen (the embedded server is
 * one process; the lock also keeps processes that share the folder apart).
 */
export class FileSnapshotStore implements SnapshotStore {
  readonly #ready: Promise<unknown>

  constructor(private readonly folder: string) {
    this.#ready = mkdir(folder, { recursive: true })
  }

  async load(room: string): Promise<StoredSnapshot | null> {
    return this.#read(room, (file) => file.readFile())
  }

  async head(room: string): Promise<SnapshotHead | null> {
    const read = await this.#read(room, async (file) => {
      const header = Buffer.alloc(SNAPSHOT_FILE_HEADER_BYTES)
      const { bytesRead } = await file.read(header, 0, header.length, 0)
      return header.subarray(0, bytesRead)
    })
    if (!read) return null
    const { state: _header, ...head } = read
    return head
  }

  /** Renames a new file in if the stored version is still `expected`. */
  async save(room: string, state: Uint8Array, expected: string | null, generation = 0): Promise<string> {
    return this.#replace(room, encodeSnapshotFile({ state, generation, deleted: false }), (current) => {
      if (current?.version !== (expected ?? undefined)) {
        throw new SnapshotConflictError(
          `room ${room} is at version ${current?.version ?? null}, not ${expected}`,
        )
      }
      return true
    })
  }

  async delete(room: string, generation: number): Promise<void> {
    const tombstone = encodeSnapshotFile({ state: new Uint8Array(), generation, deleted: true })
    await this.#replace(room, tombstone, (current) => (current?.generation ?? 0) <= generation)
  }

  /**
   * Reads the room's file through one handle, so the version is that of the bytes read even if a
   * save lands; `readBytes` reads all of it or just its header.
   */
  async #read(
    room: string,
    readBytes: (file: FileHandle) => Promise<Uint8Array>,
  ): Promise<StoredSnapshot | null> {
    await this.#ready
    let file: FileHandle
    try {
      file = await open(this.#path(room), 'r')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
    try {
      const [bytes, stats] = await Promise.all([readBytes(file), file.stat({ bigint: true })])
      const { state, generation, deleted } = decodeSnapshotFile(
        new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      )
      return { state, version: versionOf(stats), generation, ...(deleted ? { deleted: true } : {}) }
    } finally {
      await file.close()
    }
  }

  /**
   * Writes and syncs a temporary file, then, holding the room's lock, renames it over the old one
   * if `shouldReplace` (given what is stored now) says so; it throws to refuse.
   */
  async #replace(
    room: string,
    bytes: Uint8Array,
    shouldReplace: (current: SnapshotHead | null) => boolean,
  ): Promise<string> {
    await this.#ready
    const target = this.#path(room)
    const temporary = `${target}.${randomUUID()}.tmp`
    try {
      const file = await open(temporary, 'wx')
      let version: string
      try {
        await file.writeFile(bytes)
        await file.sync()
        version = versionOf(await file.stat({ bigint: true })) // a rename keeps all three
      } finally {
        await file.close()
      }
      await this.#locked(target, async () => {
        if (shouldReplace(await this.head(room))) await rename(temporary, target)
      })
      return version
    } finally {
      // Nothing is left behind when the write, the sync or the comparison failed (a full disk).
      await rm(temporary, { force: true })
    }
  }

  async close(): Promise<void> {}

  #path(room: string): string {
    return roomFilePath(this.folder, room, '.ybin')
  }

  /**
   * Runs `critical` holding `<target>.lock`: created exclusively, holding this holder's own token.
   * A lock older than `STALE_LOCK_MS` belongs to a writer that died holding it; it is taken over by
   * renaming it away (only one of several waiters can), and a holder removes the lock only while
   * it still holds its own token.
   */
  async #locked<T>(target: string, critical: () => Promise<T>): Promise<T> {
    const lock = `${target}.lock`
    const token = randomUUID()
    for (;;) {
      try {
        await writeFile(lock, token, { flag: 'wx' })
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        const seen = await stat(lock).catch(() => null)
        if (seen && Date.now() - seen.mtimeMs > STALE_LOCK_MS) {
          const stale = `${lock}.${token}.stale`
          const taken = await rename(lock, stale).then(
            () => stat(stale),
            () => null, // another waiter took it over first
          )
          // Renamed a fresh lock another waiter had just taken over: give it back.
          if (taken && taken.ino !== seen.ino) await link(stale, lock).catch(() => {})
          if (taken) await rm(stale, { force: true })
        } else {
          await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS))
        }
      }
    }
    try {
      return await critical()
    } finally {
      if ((await readFile(lock, 'utf8').catch(() => null)) === token) await rm(lock, { force: true })
    }
  }
}

function versionOf(stats: { ino: bigint; mtimeNs: bigint; size: bigint }): string {
  return `${stats.ino}-${stats.mtimeNs}-${stats.size}`
}

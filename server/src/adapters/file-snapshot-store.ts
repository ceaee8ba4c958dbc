import { type FileHandle, mkdir, open, rename, rm, stat } from 'node:fs/promises'
import type {
  SnapshotHead,
  SnapshotStore,
  SnapshotVersionPage,
  StoredSnapshot,
} from '../ports/snapshot-store.js'
import { DEFAULT_STALE_FILE_MS, DEFAULT_STALE_LOCK_MS, sweepLeftovers } from './file-leftovers.js'
import { withFileLock } from './file-lock.js'
import { ownerTag } from './file-owner.js'
import { FileSnapshotHistory, fileVersion, versionOf } from './file-snapshot-history.js'
import { refusedSave } from './refused-save.js'
import { roomFilePath } from './room-files.js'
import {
  decodeSnapshotFile,
  encodeSnapshotFile,
  SNAPSHOT_FILE_HEADER_BYTES,
  storedSnapshotOf,
  TOMBSTONE_FILE_BYTES,
} from './snapshot-format.js'
import { DEFAULT_SNAPSHOT_VERSIONS, versionNotFound } from './snapshot-versions.js'

export interface FileSnapshotStoreOptions {
  /**
   * A room's lock whose holder is not provably gone (a process on another host sharing the
   * folder, or an older version's lock) is taken over once it is this old. Default 30 s.
   */
  staleLockMs?: number
  /** A temporary file whose writer is not provably gone is removed at open once it is this old. Default 1 h. */
  staleFileMs?: number
  /**
   * Saved versions kept per room, the current one included (`SNAPSHOT_FILE_VERSIONS`): each save
   * or deletion keeps the file it replaces, and drops the oldest past this. Default 20.
   */
  versions?: number
}

/** `<room>.ybin.<owner tag>.tmp` (a save's new file), `<room>.ybin.lock.<owner tag>.stale` (a lock taken over). */
const LEFTOVER = /\.ybin(?:\.lock)?\.([^.]+)\.(?:tmp|stale)$/
const LOCK = /\.ybin\.lock$/

/**
 * Embedded `SnapshotStore`: one `<room>.ybin` file per room in a folder, the name encoded by
 * `roomFileName` (no traversal, no case collisions, bounded length).
 *
 * A file's version is its identity (inode, modification time in nanoseconds, size): every save
 * renames a new file into place, so each saved version has its own. A save compares and renames
 * under a per-room lock file, so two savers never replace bytes unseen (the embedded server is
 * one process; the lock also keeps processes that share the folder apart).
 *
 * A saver killed mid-save leaves its temporary file, and perhaps the room's lock. Both name their
 * writer (`file-owner.ts`): opening the store sweeps those whose writer is provably gone or that
 * are past their age bound, before the first read or save, and a save takes over a lock whose
 * holder is provably gone at once.
 *
 * The files a save replaces are kept as the room's old versions (`FileSnapshotHistory`), up to
 * the `versions` bound.
 */
export class FileSnapshotStore implements SnapshotStore {
  readonly #ready: Promise<unknown>
  readonly #staleLockMs: number
  readonly #keep: number

  constructor(
    private readonly folder: string,
    options: FileSnapshotStoreOptions = {},
  ) {
    this.#staleLockMs = options.staleLockMs ?? DEFAULT_STALE_LOCK_MS
    this.#keep = options.versions ?? DEFAULT_SNAPSHOT_VERSIONS
    const rules = {
      leftovers: LEFTOVER,
      staleFileMs: options.staleFileMs ?? DEFAULT_STALE_FILE_MS,
      locks: { names: LOCK, staleMs: this.#staleLockMs },
    }
    this.#ready = mkdir(folder, { recursive: true }).then(() => sweepLeftovers(folder, rules))
  }

  async load(room: string): Promise<StoredSnapshot | null> {
    return this.#readAt(this.#path(room), (file) => file.readFile())
  }

  async head(room: string): Promise<SnapshotHead | null> {
    const read = await this.#readAt(this.#path(room), async (file) => {
      const header = Buffer.alloc(SNAPSHOT_FILE_HEADER_BYTES)
      const { bytesRead } = await file.read(header, 0, header.length, 0)
      return header.subarray(0, bytesRead)
    })
    if (!read) return null
    const { state: _header, ...head } = read
    return head
  }

  async listVersions(
    room: string,
    options: { limit: number; cursor?: string | null },
  ): Promise<SnapshotVersionPage> {
    await this.#ready
    const path = this.#path(room)
    const stats = await stat(path, { bigint: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null
      throw error
    })
    const page = await this.#history(room).page(stats && fileVersion(versionOf(stats), stats), options)
    // A tombstone is a bare header: only files of that size are read to tell.
    for (const version of page.versions) {
      if (version.bytes !== TOMBSTONE_FILE_BYTES) continue
      const read = await this.readVersion(room, version.id).catch(() => null)
      if (read?.deleted) version.deleted = true
    }
    return page
  }

  async readVersion(room: string, id: string): Promise<StoredSnapshot> {
    const path = this.#history(room).fileOf(id)
    if (!path) throw versionNotFound(room, id)
    // The current file, else an old one (where the current one goes if a save lands meanwhile).
    const current = (await this.head(room))?.version === id ? await this.load(room) : null
    if (current?.version === id) return current
    const old = await this.#readAt(path, (file) => file.readFile())
    if (old?.version !== id) throw versionNotFound(room, id)
    return old
  }

  /** Renames a new file in if the stored version is still `expected`. */
  async save(
    room: string,
    state: Uint8Array,
    expected: string | null,
    generation = 0,
    epoch = 0,
  ): Promise<string> {
    const bytes = encodeSnapshotFile({ state, generation, deleted: false, epoch })
    return this.#replace(room, bytes, (current) => {
      if (current?.version !== (expected ?? undefined)) throw refusedSave(room, current, expected, epoch)
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
  async #readAt(
    path: string,
    readBytes: (file: FileHandle) => Promise<Uint8Array>,
  ): Promise<StoredSnapshot | null> {
    await this.#ready
    let file: FileHandle
    try {
      file = await open(path, 'r')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
    try {
      const [bytes, stats] = await Promise.all([readBytes(file), file.stat({ bigint: true })])
      const contents = decodeSnapshotFile(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
      return storedSnapshotOf(contents, versionOf(stats))
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
    const temporary = `${target}.${ownerTag()}.tmp`
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
      await withFileLock(`${target}.lock`, this.#staleLockMs, async () => {
        const current = await this.head(room)
        if (!shouldReplace(current)) return
        await this.#history(room).keepReplaced(current?.version)
        await rename(temporary, target)
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

  #history(room: string): FileSnapshotHistory {
    return new FileSnapshotHistory(this.#path(room), this.#keep)
  }
}

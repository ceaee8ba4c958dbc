import type {
  SnapshotHead,
  SnapshotStore,
  SnapshotVersion,
  SnapshotVersionPage,
  StoredSnapshot,
} from '../ports/snapshot-store.js'
import { refusedSave } from './refused-save.js'
import { DEFAULT_SNAPSHOT_VERSIONS, pageOfVersions, versionNotFound } from './snapshot-versions.js'

export interface MemorySnapshotStoreOptions {
  /** Saved versions kept per room, the current one included (older ones are dropped). Default 20. */
  versions?: number
}

interface Kept extends StoredSnapshot {
  savedAt: Date
}

/**
 * `SnapshotStore` in this process's memory: for tests, and for servers of one process that share
 * it (pass the same instance). Saves are conditional as in the file and S3 stores; each save gets
 * a version of its own, never reused, so a stale version can never match a later save's. Each
 * room keeps its last `versions` saved versions (newest first), each listed under its version.
 */
export class MemorySnapshotStore implements SnapshotStore {
  readonly #rooms = new Map<string, Kept[]>()
  readonly #keep: number
  #lastVersion = 0

  constructor(options: MemorySnapshotStoreOptions = {}) {
    this.#keep = options.versions ?? DEFAULT_SNAPSHOT_VERSIONS
  }

  async load(room: string): Promise<StoredSnapshot | null> {
    const stored = this.#rooms.get(room)?.[0]
    return stored ? copy(stored) : null
  }

  async head(room: string): Promise<SnapshotHead | null> {
    const stored = this.#rooms.get(room)?.[0]
    if (!stored) return null
    const { state: _state, savedAt: _savedAt, ...head } = stored
    return head
  }

  async save(
    room: string,
    state: Uint8Array,
    expected: string | null,
    generation = 0,
    epoch = 0,
  ): Promise<string> {
    const current = this.#rooms.get(room)?.[0] ?? null
    if ((current?.version ?? null) !== expected) throw refusedSave(room, current, expected, epoch)
    return this.#keepNew(room, {
      state: state.slice(),
      version: '',
      generation,
      ...(epoch > 0 ? { epoch } : {}),
      savedAt: new Date(),
    })
  }

  async delete(room: string, generation: number): Promise<void> {
    if ((this.#rooms.get(room)?.[0]?.generation ?? 0) > generation) return
    this.#keepNew(room, {
      state: new Uint8Array(),
      version: '',
      generation,
      deleted: true,
      savedAt: new Date(),
    })
  }

  async listVersions(
    room: string,
    options: { limit: number; cursor?: string | null },
  ): Promise<SnapshotVersionPage> {
    const all = (this.#rooms.get(room) ?? []).map(
      ({ version, savedAt, state, deleted }): SnapshotVersion => ({
        id: version,
        savedAt,
        bytes: state.length,
        ...(deleted ? { deleted } : {}),
      }),
    )
    // Versions are increasing numbers: a cursor reads on below it, kept or dropped since.
    return pageOfVersions(all, options, (cursor) => {
      if (!/^[1-9][0-9]{0,15}$/.test(cursor)) return null
      return (version) => Number(version.id) < Number(cursor)
    })
  }

  async readVersion(room: string, id: string): Promise<StoredSnapshot> {
    const kept = this.#rooms.get(room)?.find((stored) => stored.version === id)
    if (!kept) throw versionNotFound(room, id)
    return copy(kept)
  }

  async close(): Promise<void> {}

  #keepNew(room: string, stored: Kept): string {
    const version = String(++this.#lastVersion)
    const kept = [{ ...stored, version }, ...(this.#rooms.get(room) ?? [])]
    this.#rooms.set(room, kept.slice(0, this.#keep))
    return version
  }
}

/** Copied, as a store's bytes are: a caller changing what it got changes nothing stored. */
function copy({ savedAt: _savedAt, ...stored }: Kept): StoredSnapshot {
  return { ...stored, state: stored.state.slice() }
}

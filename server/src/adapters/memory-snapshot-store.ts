import { SnapshotConflictError } from '../errors.js'
import type { SnapshotHead, SnapshotStore, StoredSnapshot } from '../ports/snapshot-store.js'

/**
 * `SnapshotStore` in this process's memory: for tests, and for servers of one process that share
 * it (pass the same instance). Saves are conditional as in the file and S3 stores; each save gets
 * a version of its own, never reused, so a stale version can never match a later save's.
 */
export class MemorySnapshotStore implements SnapshotStore {
  readonly #rooms = new Map<string, StoredSnapshot>()
  #lastVersion = 0

  async load(room: string): Promise<StoredSnapshot | null> {
    const stored = this.#rooms.get(room)
    // Copied, as a store's bytes are: a caller changing what it got changes nothing stored.
    return stored ? { ...stored, state: stored.state.slice() } : null
  }

  async head(room: string): Promise<SnapshotHead | null> {
    const stored = this.#rooms.get(room)
    if (!stored) return null
    const { state: _state, ...head } = stored
    return head
  }

  async save(room: string, state: Uint8Array, expected: string | null, generation = 0): Promise<string> {
    const current = this.#rooms.get(room)?.version ?? null
    if (current !== expected) {
      throw new SnapshotConflictError(`room ${room} is at version ${current}, not ${expected}`)
    }
    const version = String(++this.#lastVersion)
    this.#rooms.set(room, { state: state.slice(), version, generation })
    return version
  }

  async delete(room: string, generation: number): Promise<void> {
    if ((this.#rooms.get(room)?.generation ?? 0) > generation) return
    const version = String(++this.#lastVersion)
    this.#rooms.set(room, { state: new Uint8Array(), version, generation, deleted: true })
  }

  async close(): Promise<void> {}
}

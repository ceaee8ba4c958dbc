import type {
  SnapshotHead,
  SnapshotStore,
  SnapshotVersionPage,
  StoredSnapshot,
} from '../../src/ports/snapshot-store.js'

/**
 * Wraps a real snapshot store to inject faults: failing or slow saves, failing or held loads.
 * It records what reached the real store so tests can assert nothing was written.
 */
export class ControlledSnapshotStore implements SnapshotStore {
  failSaves = 0
  failLoads = false
  saveDelayMs = 0
  loadGate: Promise<void> | null = null
  gateHeads = true
  failDeletes = false
  /** Holds saves (after the caller encoded its state) until it resolves. */
  saveGate: Promise<void> | null = null
  /** Called as a save arrives, before it waits for `saveGate`. */
  onSave: (() => void) | null = null
  saveAttempts = 0
  savesCompleted = 0
  /** Whole states it was asked for so far. */
  statesRead = 0
  inFlight = 0
  maxInFlight = 0

  constructor(private readonly inner: SnapshotStore) {}

  async load(room: string): Promise<StoredSnapshot | null> {
    this.statesRead++
    if (this.loadGate) await this.loadGate
    if (this.failLoads) throw new Error('injected load failure')
    return this.inner.load(room)
  }

  /** Held and failed as loads are (it is how a room's load starts), unless `gateHeads` is false. */
  async head(room: string): Promise<SnapshotHead | null> {
    if (this.loadGate && this.gateHeads) await this.loadGate
    if (this.failLoads) throw new Error('injected load failure')
    return this.inner.head(room)
  }

  async save(room: string, state: Uint8Array, expected: string | null, generation?: number): Promise<string> {
    this.saveAttempts++
    this.onSave?.()
    if (this.saveGate) await this.saveGate
    this.inFlight++
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    try {
      if (this.saveDelayMs) await new Promise((resolve) => setTimeout(resolve, this.saveDelayMs))
      if (this.failSaves > 0) {
        this.failSaves--
        throw new Error('injected save failure')
      }
      const version = await this.inner.save(room, state, expected, generation)
      this.savesCompleted++
      return version
    } finally {
      this.inFlight--
    }
  }

  listVersions(
    room: string,
    options: { limit: number; cursor?: string | null },
  ): Promise<SnapshotVersionPage> {
    return this.inner.listVersions(room, options)
  }

  readVersion(room: string, id: string): Promise<StoredSnapshot> {
    return this.inner.readVersion(room, id)
  }

  async delete(room: string, generation: number): Promise<void> {
    if (this.failDeletes) throw new Error('injected delete failure')
    return this.inner.delete(room, generation)
  }

  close(): Promise<void> {
    return this.inner.close()
  }
}

import type { SnapshotStore, StoredSnapshot } from '../../src/ports/snapshot-store.js'

/**
 * Wraps a real snapshot store to inject faults: failing or slow saves, failing or held loads.
 * It records what reached the real store so tests can assert nothing was written.
 */
export class ControlledSnapshotStore implements SnapshotStore {
  failSaves = 0
  failLoads = false
  saveDelayMs = 0
  loadGate: Promise<void> | null = null
  /** Holds saves (after the caller encoded its state) until it resolves. */
  saveGate: Promise<void> | null = null
  /** Called as a save arrives, before it waits for `saveGate`. */
  onSave: (() => void) | null = null
  saveAttempts = 0
  savesCompleted = 0
  inFlight = 0
  maxInFlight = 0

  constructor(private readonly inner: SnapshotStore) {}

  async load(room: string): Promise<StoredSnapshot | null> {
    if (this.loadGate) await this.loadGate
    if (this.failLoads) throw new Error('injected load failure')
    return this.inner.load(room)
  }

  async save(room: string, state: Uint8Array, expected: string | null): Promise<string> {
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
      const version = await this.inner.save(room, state, expected)
      this.savesCompleted++
      return version
    } finally {
      this.inFlight--
    }
  }

  delete(room: string): Promise<void> {
    return this.inner.delete(room)
  }

  close(): Promise<void> {
    return this.inner.close()
  }
}

import type { JournalContents, JournalPosition, UpdateJournal } from '../../src/ports/update-journal.js'
import { deferred } from './deferred.js'

/** Wraps a real journal so a test can hold its appends until it opens the gate. */
export class GatedJournal implements UpdateJournal {
  readonly #gate = deferred()
  appendsStarted = 0

  constructor(private readonly inner: UpdateJournal) {}

  openGate(): void {
    this.#gate.resolve()
  }

  async append(room: string, update: Uint8Array, epoch?: number): Promise<JournalPosition> {
    this.appendsStarted++
    await this.#gate.promise
    return this.inner.append(room, update, epoch)
  }

  fence(room: string, epoch: number): Promise<void> {
    return this.inner.fence(room, epoch)
  }

  read(room: string): Promise<JournalContents> {
    return this.inner.read(room)
  }

  trim(room: string, position: JournalPosition, epoch?: number): Promise<void> {
    return this.inner.trim(room, position, epoch)
  }

  delete(room: string, epoch?: number): Promise<void> {
    return this.inner.delete(room, epoch)
  }

  close(): Promise<void> {
    return this.inner.close()
  }
}

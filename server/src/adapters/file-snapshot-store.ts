import { randomUUID } from 'node:crypto'
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { SnapshotStore } from '../ports/snapshot-store.js'

/**
 * Embedded `SnapshotStore`: one `<room>.ybin` file per room in a folder. Room names are already
 * restricted to `[A-Za-z0-9._~:-]`, so they are safe file names once the suffix is added.
 */
export class FileSnapshotStore implements SnapshotStore {
  readonly #ready: Promise<unknown>

  constructor(private readonly folder: string) {
    this.#ready = mkdir(folder, { recursive: true })
  }

  async load(room: string): Promise<Uint8Array | null> {
    await this.#ready
    try {
      return new Uint8Array(await readFile(this.#path(room)))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
  }

  /** Writes a temporary file, syncs it and renames it over the old one: a crash leaves either. */
  async save(room: string, state: Uint8Array): Promise<void> {
    await this.#ready
    const target = this.#path(room)
    const temporary = `${target}.${randomUUID()}.tmp`
    const file = await open(temporary, 'w')
    try {
      await file.writeFile(state)
      await file.sync()
    } finally {
      await file.close()
    }
    try {
      await rename(temporary, target)
    } catch (error) {
      await rm(temporary, { force: true })
      throw error
    }
  }

  async close(): Promise<void> {}

  #path(room: string): string {
    return join(this.folder, `${room}.ybin`)
  }
}

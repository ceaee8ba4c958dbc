import { currentGeneration, type SnapshotStore } from '../ports/snapshot-store.js'

/** Replaces a room's snapshot whatever is stored now (seeding a test's store), in its current incarnation. */
export async function putSnapshot(store: SnapshotStore, room: string, state: Uint8Array): Promise<string> {
  const current = await store.head(room)
  return store.save(room, state, current?.version ?? null, currentGeneration(current))
}

/** The room's saved bytes, or null (never saved, or deleted: its tombstone holds none). */
export async function storedState(
  store: Pick<SnapshotStore, 'load'>,
  room: string,
): Promise<Uint8Array | null> {
  const stored = await store.load(room)
  return stored && !stored.deleted ? stored.state : null
}

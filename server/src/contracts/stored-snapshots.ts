import type { SnapshotStore } from '../ports/snapshot-store.js'

/** Replaces a room's snapshot whatever is stored now (seeding a test's store). */
export async function putSnapshot(store: SnapshotStore, room: string, state: Uint8Array): Promise<string> {
  const current = await store.load(room)
  return store.save(room, state, current?.version ?? null)
}

/** The room's saved bytes, or null. */
export async function storedState(
  store: Pick<SnapshotStore, 'load'>,
  room: string,
): Promise<Uint8Array | null> {
  return (await store.load(room))?.state ?? null
}

import * as Y from 'yjs'
import { agree, type RoomViews } from './checker.js'
import type { FaultCluster } from './fault-cluster.js'
import { EDITS } from './writing-session.js'

/** The edit ids a room's state holds, in document order. */
export function editIds(state: Uint8Array): string[] {
  const doc = new Y.Doc()
  try {
    Y.applyUpdate(doc, state)
    return doc.getArray<string>(EDITS).toArray()
  } finally {
    doc.destroy()
  }
}

/** Each server's copy of each room as it holds it now (internal endpoint); null where it holds none. */
export async function heldViews(cluster: FaultCluster, rooms: string[]): Promise<RoomViews> {
  return viewsBy(cluster, rooms, async (server, room) => {
    const state = await cluster.heldState(server, room).catch(() => null)
    return state && editIds(state)
  })
}

/** Each server's copy of each room through the REST API, which loads it where it is not loaded. */
export async function restViews(cluster: FaultCluster, rooms: string[]): Promise<RoomViews> {
  return viewsBy(cluster, rooms, (server, room) => cluster.restState(server, room).then(editIds, () => null))
}

/**
 * Waits until every room is held and all its copies agree (`agree`), or `timeoutMs` passes; resolves
 * to the last views read and how long the wait took.
 */
export async function awaitAgreement(
  cluster: FaultCluster,
  rooms: string[],
  timeoutMs: number,
): Promise<{ views: RoomViews; agreed: boolean; ms: number }> {
  const started = performance.now()
  for (;;) {
    const views = await heldViews(cluster, rooms)
    const agreed = [...views.values()].every(agree)
    const ms = performance.now() - started
    if (agreed || ms > timeoutMs) return { views, agreed, ms }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

async function viewsBy(
  cluster: FaultCluster,
  rooms: string[],
  read: (server: number, room: string) => Promise<string[] | null>,
): Promise<RoomViews> {
  const views: RoomViews = new Map()
  for (const room of rooms) {
    views.set(
      room,
      await Promise.all(Array.from({ length: cluster.size }, (_, server) => read(server, room))),
    )
  }
  return views
}

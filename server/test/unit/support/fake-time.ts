import type { TestContext } from 'node:test'
import * as Y from 'yjs'
import type { SnapshotStore } from '../../../src/ports/snapshot-store.js'
import { settle } from './turns.js'

/** Fakes timers and the clock; `setImmediate` stays real, so `settle` and `until` still work. */
export function fakeTime(t: TestContext): (ms: number) => Promise<void> {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] })
  /** Moves the clock on by `ms`, then lets whatever the timers started run to its end. */
  return async (ms) => {
    t.mock.timers.tick(ms)
    await settle()
  }
}

/** The text of the room's stored snapshot; null when none is stored. */
export async function storedText(store: SnapshotStore, room: string): Promise<string | null> {
  const stored = await store.load(room)
  if (!stored || stored.deleted) return null
  const doc = new Y.Doc()
  Y.applyUpdate(doc, stored.state)
  return doc.getText('t').toString()
}

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { MetadataSink } from '../ports/metadata-sink.js'

/** What every `MetadataSink` adapter must do: take events without blocking or throwing. */
export function metadataSinkContract(name: string, createSink: () => Promise<MetadataSink>): void {
  describe(`MetadataSink contract: ${name}`, () => {
    it('accepts every kind of event synchronously and closes cleanly', async () => {
      const sink = await createSink()
      const results = [
        sink.record({ type: 'room-loaded', room: 'r', bytes: 10 }),
        sink.record({
          type: 'connection-opened',
          room: 'r',
          connectionId: 'c1',
          userId: 'u',
          userName: null,
          userInfo: null,
        }),
        sink.record({ type: 'connection-closed', room: 'r', connectionId: 'c1' }),
        sink.record({ type: 'room-unloaded', room: 'r', bytes: 12 }),
      ]
      assert.deepEqual(
        results,
        [undefined, undefined, undefined, undefined],
        'record returns nothing to await',
      )
      await sink.close()
    })
  })
}

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { StaleEpochError } from '../errors.js'
import type { UpdateJournal } from '../ports/update-journal.js'
import { TRICKY_ROOM_NAMES } from './tricky-room-names.js'
import { uniqueRoom } from './unique-room.js'

export interface JournalFixture {
  /** A journal for `writer` (a server id) on the fixture's shared storage. */
  open(writer: string): UpdateJournal
  cleanup(): Promise<void>
  /** One server writes this journal (an embedded file journal, a folder of its own). */
  singleWriter?: boolean
}

const bytes = (...values: number[]) => new Uint8Array(values)
const isStale = (error: unknown) => error instanceof StaleEpochError && error.code === 'STALE_EPOCH'

/** What every `UpdateJournal` adapter must do. */
export function updateJournalContract(name: string, createFixture: () => Promise<JournalFixture>): void {
  describe(`UpdateJournal contract: ${name}`, () => {
    it('reads nothing for a room never written, then every append in order', async () => {
      const fixture = await createFixture()
      const journal = fixture.open('server-a')
      const room = uniqueRoom('journal')
      assert.deepEqual(await journal.read(room), { updates: [], position: new Map() })
      await journal.append(room, bytes(1, 0, 2))
      await journal.append(room, bytes(3))
      const { updates, position } = await journal.read(room)
      assert.deepEqual(updates, [bytes(1, 0, 2), bytes(3)])
      assert.equal(position.size, 1)
      await journal.close()
      await fixture.cleanup()
    })

    it('keeps the order of many appends made at once, room by room, each confirmed at its own position', async () => {
      const fixture = await createFixture()
      const journal = fixture.open('server-a')
      const rooms = [uniqueRoom('journal'), uniqueRoom('journal')]
      // All in one event-loop turn: an adapter may send them together.
      const appended = Array.from({ length: 60 }, (_, n) => journal.append(rooms[n % 2] as string, bytes(n)))
      const positions = await Promise.all(appended)
      for (const [i, room] of rooms.entries()) {
        const { updates, position } = await journal.read(room)
        assert.deepEqual(
          updates,
          Array.from({ length: 30 }, (_, k) => bytes(2 * k + i)),
        )
        // The last append to the room is confirmed at the position the read ends at.
        assert.deepEqual(positions[58 + i], position)
      }
      await journal.close()
      await fixture.cleanup()
    })

    it('trims up to a position and keeps what came after it, also an append racing the trim', async () => {
      const fixture = await createFixture()
      const journal = fixture.open('server-a')
      const room = uniqueRoom('journal')
      const first = await journal.append(room, bytes(1))
      await journal.append(room, bytes(2))
      await journal.trim(room, first)
      assert.deepEqual((await journal.read(room)).updates, [bytes(2)])
      const { position } = await journal.read(room)
      await Promise.all([journal.trim(room, position), journal.append(room, bytes(3))])
      assert.deepEqual((await journal.read(room)).updates, [bytes(3)])
      await journal.trim(room, first) // an old position again: nothing newer goes
      assert.deepEqual((await journal.read(room)).updates, [bytes(3)])
      await journal.trim(room, (await journal.read(room)).position)
      assert.deepEqual((await journal.read(room)).updates, [])
      await journal.append(room, bytes(4))
      assert.deepEqual((await journal.read(room)).updates, [bytes(4)], 'appends go on after an empty trim')
      await journal.close()
      await fixture.cleanup()
    })

    it('keeps every room name apart: slashes, case, dots, long and non-ASCII names', async () => {
      const fixture = await createFixture()
      const journal = fixture.open('server-a')
      for (const [i, room] of TRICKY_ROOM_NAMES.entries()) await journal.append(room, bytes(i, 1))
      for (const [i, room] of TRICKY_ROOM_NAMES.entries()) {
        assert.deepEqual((await journal.read(room)).updates, [bytes(i, 1)], room)
      }
      const [first = '', second = ''] = TRICKY_ROOM_NAMES
      await journal.trim(first, (await journal.read(first)).position)
      assert.deepEqual((await journal.read(first)).updates, [])
      assert.deepEqual(
        (await journal.read(second)).updates,
        [bytes(1, 1)],
        'trimming one room leaves the others',
      )
      await journal.close()
      await fixture.cleanup()
    })

    it("deletes a room: every writer's entries go, and appends start afresh", async () => {
      const fixture = await createFixture()
      const [a, b] = [fixture.open('server-a'), fixture.open('server-b')]
      const room = uniqueRoom('journal')
      await a.delete(room)
      await a.append(room, bytes(1))
      await b.append(room, bytes(2))
      await b.close() // a file journal has one writer per folder
      await a.delete(room)
      assert.deepEqual(await a.read(room), { updates: [], position: new Map() })
      await a.append(room, bytes(3))
      const reader = fixture.open('server-c')
      assert.deepEqual((await reader.read(room)).updates, [bytes(3)])
      await Promise.all([a.close(), reader.close()])
      await fixture.cleanup()
    })

    it("outlives its writer: the next server reads the dead one's updates and trims them", async () => {
      const fixture = await createFixture()
      const room = uniqueRoom('journal')
      const dead = fixture.open('server-a')
      await dead.append(room, bytes(1))
      await dead.append(room, bytes(2))
      await dead.close()
      const next = fixture.open('server-b')
      const read = await next.read(room)
      assert.deepEqual(read.updates, [bytes(1), bytes(2)])
      await next.append(room, bytes(3))
      await next.trim(room, read.position)
      assert.deepEqual((await next.read(room)).updates, [bytes(3)])
      await next.close()
      await fixture.cleanup()
    })

    it('keeps one stream per room: what each owner in turn appended reads back in append order', async () => {
      const fixture = await createFixture()
      const first = fixture.open('server-a')
      const next = fixture.singleWriter ? first : fixture.open('server-b')
      const room = uniqueRoom('journal')
      await first.append(room, bytes(1), 1)
      await first.append(room, bytes(2), 1)
      await next.fence(room, 2)
      await next.append(room, bytes(3), 2)
      const read = await next.read(room)
      assert.deepEqual(read.updates, [bytes(1), bytes(2), bytes(3)])
      assert.equal(read.position.size, 1, 'one stream')
      await first.close()
      if (next !== first) await next.close()
      await fixture.cleanup()
    })

    it('refuses the writes of an owner a later one fenced out, and loses nothing it confirmed', async () => {
      const fixture = await createFixture()
      const earlier = fixture.open('server-a')
      const later = fixture.singleWriter ? earlier : fixture.open('server-b')
      const [room, other] = [uniqueRoom('journal'), uniqueRoom('journal')]
      await earlier.append(room, bytes(1), 1)
      const confirmed = await earlier.read(room)
      await later.fence(room, 2) // the next owner fences, then reads
      await assert.rejects(earlier.append(room, bytes(9), 1), isStale, 'an append')
      await assert.rejects(earlier.trim(room, confirmed.position, 1), isStale, 'a trim')
      await assert.rejects(earlier.delete(room, 1), isStale, 'a deletion')
      await assert.rejects(earlier.fence(room, 1), isStale, 'a fence back to its epoch')
      assert.deepEqual((await later.read(room)).updates, [bytes(1)], 'what it confirmed stays, nothing more')
      // Appends made at once: the stale one is refused alone.
      const [refused, other1] = await Promise.allSettled([
        earlier.append(room, bytes(8), 1),
        earlier.append(other, bytes(5), 1), // another room has its own fence
      ])
      assert.equal(refused.status, 'rejected')
      assert.ok(isStale((refused as PromiseRejectedResult).reason))
      assert.equal(other1.status, 'fulfilled')
      await later.append(room, bytes(2), 2)
      await later.append(room, bytes(3), 3) // a later epoch's write raises the fence
      await assert.rejects(later.append(room, bytes(9), 2), isStale, 'below the raised fence')
      const all = (await later.read(room)).updates.map(([value]) => value)
      assert.deepEqual(all, [1, 2, 3], 'in the order they were appended')
      assert.deepEqual((await later.read(other)).updates, [bytes(5)])
      await later.trim(room, (await later.read(room)).position, 3)
      assert.deepEqual((await later.read(room)).updates, [])
      await earlier.close()
      if (later !== earlier) await later.close()
      await fixture.cleanup()
    })

    it('keeps rooms apart and a large update intact', async () => {
      const fixture = await createFixture()
      const journal = fixture.open('server-a')
      const suffix = uniqueRoom('')
      const names = ['.', '..', 'a:b', 'a.B', 'x'.repeat(100)].map((n) => `${n}${suffix}`)
      const big = new Uint8Array(2 * 1024 * 1024).map((_, i) => i % 251)
      await Promise.all(names.map((room, i) => journal.append(room, bytes(i))))
      await journal.append(names[0] as string, big)
      for (const [i, room] of names.entries()) {
        const expected = i === 0 ? [bytes(0), big] : [bytes(i)]
        assert.deepEqual((await journal.read(room)).updates, expected, room)
      }
      await journal.close()
      await fixture.cleanup()
    })
  })
}

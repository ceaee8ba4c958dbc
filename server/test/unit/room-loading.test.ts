import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { MemoryUpdateJournal } from '../../src/adapters/memory-update-journal.js'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import type { SnapshotHead, StoredSnapshot } from '../../src/ports/snapshot-store.js'
import { decodeAwarenessUpdate } from '../../src/protocol/codec.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { deferred } from '../helpers/deferred.js'
import { TestWorld } from './support/test-world.js'
import { settle, until } from './support/turns.js'

/** Counts reads (a load starts with the head), so a test knows the server is waiting on one. */
class CountingStore extends ControlledSnapshotStore {
  loads = 0
  override load(room: string): Promise<StoredSnapshot | null> {
    this.loads++
    return super.load(room)
  }
  override head(room: string): Promise<SnapshotHead | null> {
    this.loads++
    return super.head(room)
  }
}

let world: TestWorld

describe('a room loading', () => {
  afterEach(() => world.close())

  it("holds a client's frames until the room has loaded, then handles them in order", async () => {
    world = new TestWorld()
    const store = new CountingStore(world.snapshots)
    const gate = deferred()
    store.loadGate = gate.promise
    const server = world.server({ snapshots: store })
    const room = uniqueRoom()
    const client = server.connect(room) // sends its sync step 1 at once
    client.setPresence({ name: 'ann' })
    client.queryPresence()
    client.doc.getText('t').insert(0, 'offline edit')
    await until(() => store.loads > 0, 'the load waits on the store')
    await settle()
    assert.deepEqual(client.received, [], 'nothing is answered before the room has loaded')

    gate.resolve()
    await client.ready
    await settle()
    const messages = client.messages()
    assert.deepEqual(
      messages.map((m) => m.kind),
      ['sync-step1', 'sync-step2', 'awareness', 'awareness'],
      'join, then the answers to step 1, presence (echoed to a client alone) and the query',
    )
    const answer = messages[3]
    assert.ok(answer?.kind === 'awareness')
    const present = decodeAwarenessUpdate(answer.update, 1 << 16).map((entry) => entry.clientId)
    assert.deepEqual(present, [client.doc.clientID], 'the query came after the presence it asks about')
    assert.equal(server.manager.loadedRoom(room)?.doc.getText('t').toString(), 'offline edit')
  })

  it("greets a joiner with sync step 1 of the stored snapshot plus the journal's updates", async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const stored = new Y.Doc()
    stored.getText('t').insert(0, 'hello')
    await world.snapshots.save(room, Y.encodeStateAsUpdate(stored), null)
    // A server that died after journaling an edit, before any snapshot held it.
    const before = Y.encodeStateVector(stored)
    stored.getText('t').insert(5, ' world')
    await new MemoryUpdateJournal(world.journal).append(room, Y.encodeStateAsUpdate(stored, before))

    const client = world.server().connect(room)
    await client.ready
    await settle()
    const [first] = client.messages()
    assert.ok(first?.kind === 'sync-step1', 'the first frame is sync step 1')
    assert.deepEqual(first.stateVector, Y.encodeStateVector(stored))
    assert.equal(client.text(), 'hello world')
  })
})

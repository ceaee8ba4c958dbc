import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { contentOf, restoreUpdate } from '../../src/protocol/restore-update.js'
import { edit, random, syncAll } from './support/random-histories.js'

describe('restoreUpdate: an earlier version as an ordinary update', () => {
  it('gives back any earlier version of random edit histories of every root kind', () => {
    for (let seed = 1; seed <= 120; seed++) {
      const pick = random(seed)
      const docs = [new Y.Doc(), new Y.Doc(), new Y.Doc()]
      // What a server saves: the garbage-collected state of its copy, now and then.
      const versions: Uint8Array[] = []
      const steps = 20 + pick(60)
      for (let step = 0; step < steps; step++) {
        edit(docs[pick(docs.length)] as Y.Doc, pick)
        if (pick(3) === 0) syncAll(docs)
        if (pick(5) === 0) {
          syncAll(docs)
          versions.push(Y.encodeStateAsUpdate(docs[0] as Y.Doc))
        }
      }
      syncAll(docs)
      if (versions.length === 0) versions.push(Y.encodeStateAsUpdate(docs[0] as Y.Doc))
      const version = versions[pick(versions.length)] as Uint8Array
      const live = docs[pick(docs.length)] as Y.Doc
      const update = restoreUpdate(Y.encodeStateAsUpdate(live), version)
      Y.applyUpdate(live, update)
      assert.deepEqual(contentOf(Y.encodeStateAsUpdate(live)), contentOf(version), `seed ${seed}`)
      // The other copies take the same update and agree.
      syncAll(docs)
      for (const doc of docs)
        assert.deepEqual(contentOf(Y.encodeStateAsUpdate(doc)), contentOf(version), `seed ${seed}`)
    }
  })

  it('restores formatting, nested types and overwritten map entries, and undoes itself', () => {
    const doc = new Y.Doc()
    const text = doc.getText('text')
    text.insert(0, 'hello world', { bold: true })
    doc.getMap('map').set('title', 'first')
    doc.getMap('map').set('nested', Y.Array.from([1, 2]))
    const v1 = Y.encodeStateAsUpdate(doc)
    text.delete(0, 6)
    text.format(0, 5, { bold: null })
    doc.getMap('map').set('title', 'second')
    doc.getMap('map').delete('nested')
    doc.getArray('extra').push(['added'])
    const v2 = Y.encodeStateAsUpdate(doc)

    Y.applyUpdate(doc, restoreUpdate(Y.encodeStateAsUpdate(doc), v1))
    assert.deepEqual(text.toDelta(), [{ insert: 'hello world', attributes: { bold: true } }])
    assert.deepEqual(doc.getMap('map').toJSON(), { title: 'first', nested: [1, 2] })
    assert.deepEqual(doc.getArray('extra').toJSON(), [])
    // A restore is an edit like another: restoring the version before it undoes it.
    Y.applyUpdate(doc, restoreUpdate(Y.encodeStateAsUpdate(doc), v2))
    assert.deepEqual(contentOf(Y.encodeStateAsUpdate(doc)), contentOf(v2))
  })

  it('merges with an offline copy’s edits, and keeps the server’s root type out of it', () => {
    const server = new Y.Doc()
    server.getText('text').insert(0, 'one two')
    server.getMap('symphony:authors').set('1', 'user')
    const version = Y.encodeStateAsUpdate(server)
    server.getText('text').insert(7, ' three')
    const offline = new Y.Doc()
    Y.applyUpdate(offline, Y.encodeStateAsUpdate(server))
    offline.getText('text').insert(0, 'zero ')
    server.getMap('symphony:authors').set('2', 'other')

    const update = restoreUpdate(Y.encodeStateAsUpdate(server), version)
    const touched = Y.decodeUpdate(update).structs.map((s) => (s instanceof Y.Item ? s.parent : null))
    assert.ok(!(touched as unknown[]).includes('symphony:authors'), 'nothing written under the authors root')
    Y.applyUpdate(server, update)
    assert.equal(server.getText('text').toString(), 'one two')
    assert.deepEqual(server.getMap('symphony:authors').toJSON(), { '1': 'user', '2': 'other' })
    // The offline copy comes back: its edit lands on the restored text.
    Y.applyUpdate(server, Y.encodeStateAsUpdate(offline, Y.encodeStateVector(server)))
    Y.applyUpdate(offline, Y.encodeStateAsUpdate(server, Y.encodeStateVector(offline)))
    assert.equal(server.getText('text').toString(), 'zero one two')
    assert.equal(offline.getText('text').toString(), 'zero one two')
  })
})

import * as Y from 'yjs'

/**
 * A whiteboard worth `bytes` encoded: shapes in a map, each moved a few times (so the document
 * carries deletions, as a real one does), and a text typed a few characters at a time.
 */
export function whiteboard(bytes: number): Uint8Array {
  const doc = new Y.Doc()
  const shapes = doc.getMap<Record<string, unknown>>('shapes')
  const notes = doc.getText('notes')
  for (let round = 0; Y.encodeStateAsUpdate(doc).length < bytes; round++) {
    doc.transact(() => {
      for (let i = 0; i < 500; i++) {
        const id = `shape-${round * 250 + (i % 250)}`
        shapes.set(id, { x: i * 3, y: round, w: 40, h: 20, fill: '#3355ff', label: `shape ${i}` })
      }
    })
    for (let i = 0; i < 100; i++) notes.insert(notes.length, `word${i} `)
  }
  return Y.encodeStateAsUpdate(doc)
}

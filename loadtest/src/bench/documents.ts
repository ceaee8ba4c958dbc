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

/**
 * A text worth `bytes` encoded, as updates of at most `partBytes` each (a message's limit is
 * 16 MiB): written in runs of a kilobyte at random places (a few structs per run), as a long
 * document edited over time is.
 */
export function longText(bytes: number, partBytes = 4 * 2 ** 20): Uint8Array[] {
  const doc = new Y.Doc()
  const text = doc.getText('text')
  let state = 1
  const random = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
  const run = 'lorem ipsum dolor sit amet '.repeat(38).slice(0, 1024)
  const parts: Uint8Array[] = []
  let since = Y.encodeStateVector(doc)
  for (let written = 0; written < bytes; written += partBytes) {
    while (text.length < Math.min(bytes, written + partBytes)) {
      doc.transact(() => {
        for (let i = 0; i < 256; i++) text.insert(Math.floor(random() * text.length), run)
      })
    }
    parts.push(Y.encodeStateAsUpdate(doc, since))
    since = Y.encodeStateVector(doc)
  }
  return parts
}

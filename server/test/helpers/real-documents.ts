import * as Y from 'yjs'

export interface GeneratedHistory {
  /** Every update any session emitted, in the order they were made. */
  updates: Uint8Array[]
  /** A document holding all of them: what every replica converges to. */
  final: Y.Doc
  /** Distinct client ids that wrote. */
  clients: number
}

export interface HistoryOptions {
  random: () => number
  /** Editing sessions, each a fresh client id (a page load, a tab, an offline stint). */
  sessions: number
  /** Edits per session. */
  editsPerSession: number
}

/**
 * A document's history as real apps make it: many sessions with their own client ids, each
 * starting from what some replica knew (so some work offline and merge later), editing text (with
 * formatting and embeds), maps, arrays and nested types, and deleting. Everything is plain Yjs.
 */
export function generateHistory({ random, sessions, editsPerSession }: HistoryOptions): GeneratedHistory {
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)] as T
  const updates: Uint8Array[] = []
  const replicas: Y.Doc[] = []
  const final = new Y.Doc()
  for (let s = 0; s < sessions; s++) {
    const doc = new Y.Doc()
    // Start from an older replica's view (offline fork), a merge of two, or nothing.
    const base = replicas.length > 0 && random() < 0.9 ? pick(replicas) : null
    if (base) Y.applyUpdate(doc, Y.encodeStateAsUpdate(base))
    if (base && random() < 0.3) Y.applyUpdate(doc, Y.encodeStateAsUpdate(pick(replicas)))
    doc.on('update', (update: Uint8Array) => {
      updates.push(update)
      Y.applyUpdate(final, update)
    })
    for (let e = 0; e < editsPerSession; e++) edit(doc, random, pick)
    replicas.push(doc)
    if (replicas.length > 24) replicas.splice(Math.floor(random() * replicas.length), 1)[0]?.destroy()
  }
  for (const doc of replicas) doc.destroy()
  return { updates, final, clients: sessions }
}

function edit(doc: Y.Doc, random: () => number, pick: <T>(items: T[]) => T): void {
  const text = doc.getText('text')
  const map = doc.getMap<unknown>('map')
  const list = doc.getArray<unknown>('list')
  const word = () => pick(['hello', 'world', 'café', '😀 emoji', 'x', 'lorem ipsum dolor ', '\n'])
  const at = (length: number) => Math.floor(random() * (length + 1))
  doc.transact(() => {
    switch (Math.floor(random() * 10)) {
      case 0:
      case 1:
        text.insert(at(text.length), word(), random() < 0.2 ? { bold: true } : undefined)
        break
      case 2:
        if (text.length > 0) {
          const from = at(text.length - 1)
          text.delete(from, Math.min(text.length - from, 1 + Math.floor(random() * 12)))
        }
        break
      case 3:
        if (text.length > 2) text.format(at(text.length - 2), 2, { italic: random() < 0.5 ? true : null })
        else text.insertEmbed(0, { image: 'a.png', size: [1, 2] })
        break
      case 4:
        map.set(pick(['a', 'b', 'c', 'd', 'title']), pick([1, 'two', { three: [3] }, null, true, 4.5]))
        break
      case 5:
        map.delete(pick(['a', 'b', 'c', 'd', 'title']))
        break
      case 6:
        list.insert(at(list.length), [pick([1, 'item', { done: false }, [1, 2]])])
        break
      case 7:
        if (list.length > 0) list.delete(at(list.length - 1), 1)
        break
      case 8: {
        const nested = new Y.Map<unknown>()
        nested.set('x', random())
        list.insert(at(list.length), [nested])
        break
      }
      default: {
        const nested = list.toArray().find((item) => item instanceof Y.Map) as Y.Map<unknown> | undefined
        if (nested) nested.set(pick(['x', 'y', 'z']), pick([1, 'two', [3]]))
        else map.set('shape', { x: random(), y: random() })
      }
    }
  })
}

/** Each root type as JSON, for comparing replicas. */
export function contentOf(doc: Y.Doc): Record<string, unknown> {
  return {
    text: doc.getText('text').toDelta(),
    map: doc.getMap('map').toJSON(),
    list: doc.getArray('list').toJSON(),
  }
}

/** A copy of `items` in a random order (Fisher–Yates). */
export function shuffled<T>(items: T[], random: () => number): T[] {
  const copy = [...items]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[copy[i], copy[j]] = [copy[j] as T, copy[i] as T]
  }
  return copy
}

import * as Y from 'yjs'

/** A small seeded random source, so a failing history can be replayed from its seed. */
export function random(seed: number): (n: number) => number {
  let state = seed >>> 0 || 1
  return (n) => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return (state >>> 0) % n
  }
}

// No characters outside the BMP: random deletions would split their surrogate pairs, which Yjs
// stores as U+FFFD for good (editors never split them).
const WORDS = ['a', 'bc', 'déf', 'ghij', '中文', 'x y']

/** One random edit to one of `doc`'s roots of every kind: a text, a list, a map, an XML fragment. */
export function edit(doc: Y.Doc, pick: (n: number) => number): void {
  const word = WORDS[pick(WORDS.length)] as string
  switch (pick(5)) {
    case 0: {
      const text = doc.getText('text')
      if (text.length > 0 && pick(3) === 0) text.delete(pick(text.length), 1 + pick(3))
      else if (text.length > 0 && pick(4) === 0)
        text.format(pick(text.length), 2, { bold: pick(2) === 0 || null })
      else text.insert(pick(text.length + 1), word)
      return
    }
    case 1: {
      const list = doc.getArray<unknown>('list')
      if (list.length > 0 && pick(3) === 0) list.delete(pick(list.length), 1)
      else if (pick(3) === 0) {
        const nested = new Y.Map<unknown>()
        nested.set('k', word)
        list.insert(pick(list.length + 1), [nested])
      } else list.insert(pick(list.length + 1), [word, pick(100)])
      return
    }
    case 2: {
      const map = doc.getMap<unknown>('map')
      const key = `k${pick(4)}`
      const what = pick(6)
      if (what === 0) map.delete(key)
      else if (what === 1) map.set(key, Y.Array.from([word, pick(10)]))
      else if (what === 2) {
        const nested = map.get('nested')
        if (nested instanceof Y.Text) nested.insert(pick(nested.length + 1), word)
        else map.set('nested', new Y.Text(word))
      } else map.set(key, word)
      return
    }
    case 3: {
      const xml = doc.getXmlFragment('xml')
      if (xml.length > 0 && pick(3) === 0) xml.delete(pick(xml.length), 1)
      else {
        const element = new Y.XmlElement(pick(2) ? 'p' : 'h1')
        element.setAttribute('id', word)
        element.insert(0, [new Y.XmlText(word)])
        xml.insert(pick(xml.length + 1), [element])
      }
      return
    }
    default: {
      // A root type that comes and goes: restored empty, or full again.
      const late = doc.getArray<string>(`late${pick(2)}`)
      if (late.length > 0 && pick(2) === 0) late.delete(0, late.length)
      else late.push([word])
    }
  }
}

/** Syncs every document with every other one. */
export function syncAll(docs: Y.Doc[]): void {
  for (const from of docs)
    for (const to of docs)
      if (from !== to) Y.applyUpdate(to, Y.encodeStateAsUpdate(from, Y.encodeStateVector(to)))
}

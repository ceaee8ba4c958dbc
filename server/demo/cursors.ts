/** Draws other people's cursors with their names, from presence state that peers may fill with anything. */

export type Point = { x: number; y: number }
export type User = { name: string; color: string }
/** What this demo shares as presence. */
export type DemoPresence = { user: User; cursor: Point | null }

/** Reads a peer's presence defensively; null when it has no visible cursor. */
function readPresence(state: Partial<Record<keyof DemoPresence, unknown>>): DemoPresence | null {
  const u = state.user as Partial<User> | undefined
  const c = state.cursor as Partial<Point> | null | undefined
  if (typeof u?.name !== 'string' || typeof u.color !== 'string') return null
  if (!Number.isFinite(c?.x) || !Number.isFinite(c?.y)) return null
  return { user: { name: u.name.slice(0, 40), color: u.color }, cursor: c as Point }
}

function createCursorEl(clientId: number): HTMLElement {
  const el = document.createElement('div')
  el.className = 'cursor'
  el.dataset.cursorClient = String(clientId)
  // Static markup only; the name is set later through textContent.
  el.innerHTML =
    '<svg viewBox="0 0 18 18"><path d="M1 1v14l4-3.6 2.8 5.6 2.3-1.1-2.7-5.4H13z" fill="currentColor" stroke="#fff"/></svg><span class="label"></span>'
  return el
}

/** Keeps one element per visible peer cursor in `layer`. */
export class CursorLayer {
  readonly #els = new Map<number, HTMLElement>()

  constructor(private readonly layer: HTMLElement) {}

  render(peers: Array<Partial<Record<keyof DemoPresence, unknown>> & { clientId: number }>): void {
    const visible = new Set<number>()
    for (const peer of peers) {
      const presence = readPresence(peer)
      if (!presence?.cursor) continue
      visible.add(peer.clientId)
      let el = this.#els.get(peer.clientId)
      if (!el) {
        el = createCursorEl(peer.clientId)
        this.#els.set(peer.clientId, el)
        this.layer.append(el)
      }
      // The arrow's tip sits at (1, 1) in its box.
      el.style.transform = `translate(${presence.cursor.x - 1}px, ${presence.cursor.y - 1}px)`
      el.style.color = presence.user.color
      const label = el.lastElementChild as HTMLElement
      label.textContent = presence.user.name
      label.style.background = presence.user.color
    }
    for (const [clientId, el] of this.#els) {
      if (visible.has(clientId)) continue
      el.remove()
      this.#els.delete(clientId)
    }
  }
}

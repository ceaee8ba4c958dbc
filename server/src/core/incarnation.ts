/**
 * The key of one incarnation of a room in the journal. A deleted room's next incarnation gets
 * fresh journal streams, so nothing of the deleted one (a stream a crashed owner left, a late
 * append of a fenced one) reaches it.
 * Incarnation 0 keeps the room's own name (what earlier versions used). Room names never hold a
 * control character, so `<room>\0<generation>` is no other room's name.
 */
export function incarnationKey(room: string, generation: number): string {
  return generation === 0 ? room : `${room}\u0000${generation}`
}

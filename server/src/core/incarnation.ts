/**
 * The key of one incarnation of a room in the journal and on pub/sub. A deleted room's next
 * incarnation gets fresh journal streams and a fresh channel, so nothing of the deleted one
 * (a late message, a stream a crashed server left, a server that missed the deletion) reaches it.
 * Incarnation 0 keeps the room's own name (what earlier versions used). Room names never hold a
 * control character, so `<room>\0<generation>` is no other room's name.
 */
export function incarnationKey(room: string, generation: number): string {
  return generation === 0 ? room : `${room}\u0000${generation}`
}

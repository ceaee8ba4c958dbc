/**
 * Whether a token's room pattern grants `room`: an exact name, or `prefix*` for every room that
 * starts with the prefix (a lone `*` grants every room).
 */
export function roomMatches(pattern: string, room: string): boolean {
  if (pattern.endsWith('*')) return room.startsWith(pattern.slice(0, -1))
  return pattern === room
}

import { randomBytes } from 'node:crypto'

let roomCounter = 0
/**
 * A room name no other test uses, also across processes and runs sharing a backend, and across
 * copies of this module (the built suites beside a test's own helpers).
 */
export function uniqueRoom(prefix = 'room'): string {
  return `${prefix}-${process.pid}-${++roomCounter}-${Date.now().toString(36)}${randomBytes(2).toString('hex')}`
}

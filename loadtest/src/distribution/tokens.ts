import { SignJWT } from 'jose'
import type { RoomPlan } from '../virtual-users/room-run.js'

/** Mints one token per virtual user, as an application's backend would: this room, read-write. */
export function tokenMinter(secret: string | undefined, validForSeconds: number) {
  if (!secret) return async () => undefined
  const key = new TextEncoder().encode(secret)
  return (room: string, user: number): Promise<string> =>
    new SignJWT({ room, access: 'rw' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(`loadtest-user-${user}`)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + validForSeconds)
      .sign(key)
}

/**
 * Gives each room one token per user, plus one for the convergence check's fresh client (the
 * last): that room's exact name, read-write, expiring `validForSeconds` from now. Whoever runs the
 * rooms gets these, never the secret. Without a secret (a server with auth off), no tokens.
 */
export async function withRoomTokens(
  rooms: RoomPlan[],
  perRoom: number,
  secret: string | undefined,
  validForSeconds: number,
): Promise<RoomPlan[]> {
  const mint = tokenMinter(secret, validForSeconds)
  if (!secret) return rooms
  return Promise.all(
    rooms.map(async (room) => {
      const tokens: string[] = []
      for (let i = 0; i <= perRoom; i++) tokens.push((await mint(room.name, room.firstUser + i)) as string)
      return { ...room, tokens }
    }),
  )
}

import { SignJWT } from 'jose'

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

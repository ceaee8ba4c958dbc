import { type JWTPayload, SignJWT } from 'jose'

export const TEST_SECRET = 'test-secret-that-is-at-least-32-characters-long'

/** An HS256 token for `claims`, valid for an hour unless `exp` says otherwise. */
export function signToken(claims: JWTPayload, secret = TEST_SECRET): Promise<string> {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt()
  if (claims.exp === undefined) jwt.setExpirationTime('1h')
  return jwt.sign(new TextEncoder().encode(secret))
}

/** A token signed with an asymmetric private key, valid for an hour. */
export function signWithKey(
  claims: JWTPayload,
  key: Parameters<SignJWT['sign']>[0],
  header: { alg: string; kid?: string },
): Promise<string> {
  return new SignJWT(claims).setProtectedHeader(header).setExpirationTime('1h').sign(key)
}

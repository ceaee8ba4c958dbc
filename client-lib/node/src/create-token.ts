import { createPrivateKey, createSecretKey, KeyObject, type webcrypto } from 'node:crypto'
import { SignJWT } from 'jose'
import { infoClaimProblem, nameClaimProblem, subjectClaimProblem } from './token-claims.js'

/** Signing algorithms the server accepts for a private key (HS256 is for secrets). */
export type KeyAlgorithm =
  | 'RS256'
  | 'RS384'
  | 'RS512'
  | 'PS256'
  | 'PS384'
  | 'PS512'
  | 'ES256'
  | 'ES384'
  | 'ES512'
  | 'EdDSA'

interface TokenClaims {
  /** The room (exact name), a `prefix*` pattern, or a list of them. */
  room: string | string[]
  /** `'rw'` to edit, `'ro'` to watch. */
  access: 'rw' | 'ro'
  /** The user's id in your app (the `sub` claim); not starting with `symphony:`. */
  userId: string
  /** Shown to operators on the dashboard; 1–128 characters. */
  name?: string
  /** Any JSON object about the user (e.g. `{ avatar, team }`), at most 4 KB. */
  info?: Record<string, unknown>
  /** Seconds, or a span such as `'15m'`, `'1h'`. Clients ask for a new token when it runs out. */
  expiresIn: number | string
  /** Checked by the server when it sets `AUTH_ISSUER` / `AUTH_AUDIENCE`. */
  issuer?: string
  audience?: string
}

/** Signed with the server's `AUTH_SECRET` (HS256). */
export interface SecretTokenOptions extends TokenClaims {
  secret: string
}

/** Signed with a private key whose public half the server has (`AUTH_PUBLIC_KEY` or a JWKS). */
export interface KeyTokenOptions extends TokenClaims {
  /** A PEM string, a Node `KeyObject` or a WebCrypto `CryptoKey`. */
  privateKey: string | KeyObject | webcrypto.CryptoKey
  /** Default: from the key (RSA → RS256, P-256 → ES256, P-384 → ES384, Ed25519 → EdDSA). */
  algorithm?: KeyAlgorithm
  /** The `kid` header, for a server that reads keys from a JWKS URL. */
  keyId?: string
}

export type TokenOptions = SecretTokenOptions | KeyTokenOptions

/**
 * Signs a room token for one user, exactly what the Symphony server verifies.
 *
 * @example
 * const token = await createToken({
 *   room: 'team-7/*', access: 'rw', userId: user.id, name: user.name, expiresIn: '1h',
 *   secret: process.env.AUTH_SECRET,
 * })
 */
export async function createToken(options: TokenOptions): Promise<string> {
  const claims = checkedClaims(options)
  const { key, algorithm, keyId } = signingKey(options)
  let jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: algorithm, typ: 'JWT', ...(keyId ? { kid: keyId } : {}) })
    .setSubject(options.userId)
    .setIssuedAt()
    .setExpirationTime(expiry(options.expiresIn))
  if (options.issuer) jwt = jwt.setIssuer(options.issuer)
  if (options.audience) jwt = jwt.setAudience(options.audience)
  return jwt.sign(key)
}

function checkedClaims(options: TokenOptions): Record<string, unknown> {
  const rooms = Array.isArray(options.room) ? options.room : [options.room]
  if (rooms.length === 0 || !rooms.every((room) => typeof room === 'string' && room.length > 0)) {
    throw new TypeError('createToken: room must be a room name or pattern, or a non-empty list of them')
  }
  if (options.access !== 'rw' && options.access !== 'ro') {
    throw new TypeError(`createToken: access must be 'rw' or 'ro', not ${JSON.stringify(options.access)}`)
  }
  if (typeof options.userId !== 'string' || options.userId.length === 0) {
    throw new TypeError('createToken: userId must be a non-empty string')
  }
  const subjectProblem = subjectClaimProblem(options.userId)
  if (subjectProblem) throw new TypeError(`createToken: ${subjectProblem}`)
  const claims: Record<string, unknown> = { room: options.room, access: options.access }
  if (options.name !== undefined) {
    const problem = nameClaimProblem(options.name)
    if (problem) throw new TypeError(`createToken: ${problem}`)
    claims.name = options.name
  }
  if (options.info !== undefined) {
    const problem = infoClaimProblem(options.info)
    if (problem) throw new TypeError(`createToken: ${problem}`)
    claims.info = options.info
  }
  return claims
}

function expiry(expiresIn: number | string): number | string {
  if (typeof expiresIn === 'number') {
    if (!Number.isFinite(expiresIn) || expiresIn <= 0) {
      throw new TypeError('createToken: expiresIn must be a positive number of seconds')
    }
    return Math.floor(Date.now() / 1000) + Math.ceil(expiresIn)
  }
  if (typeof expiresIn !== 'string' || expiresIn.trim() === '' || expiresIn.trim().startsWith('-')) {
    throw new TypeError("createToken: expiresIn must be seconds or a span such as '1h'")
  }
  return expiresIn
}

function signingKey(options: TokenOptions): {
  key: KeyObject | webcrypto.CryptoKey
  algorithm: string
  keyId?: string
} {
  if ('secret' in options) {
    if (typeof options.secret !== 'string' || options.secret.length === 0) {
      throw new TypeError('createToken: secret must be the non-empty AUTH_SECRET of the server')
    }
    return { key: createSecretKey(new TextEncoder().encode(options.secret)), algorithm: 'HS256' }
  }
  if (!('privateKey' in options) || !options.privateKey) {
    throw new TypeError('createToken: give a secret (HS256) or a privateKey')
  }
  const key =
    typeof options.privateKey === 'string' ? createPrivateKey(options.privateKey) : options.privateKey
  const algorithm = options.algorithm ?? algorithmOf(key)
  return { key, algorithm, ...(options.keyId ? { keyId: options.keyId } : {}) }
}

/** The algorithm a private key signs with by default. */
function algorithmOf(key: KeyObject | webcrypto.CryptoKey): KeyAlgorithm {
  if (key instanceof KeyObject) {
    const type = key.asymmetricKeyType
    if (type === 'rsa') return 'RS256'
    if (type === 'rsa-pss') return 'PS256'
    if (type === 'ed25519') return 'EdDSA'
    if (type === 'ec') {
      const curve = key.asymmetricKeyDetails?.namedCurve
      if (curve === 'prime256v1') return 'ES256'
      if (curve === 'secp384r1') return 'ES384'
      if (curve === 'secp521r1') return 'ES512'
    }
    throw new TypeError(`createToken: cannot sign with a ${type ?? 'secret'} key; pass algorithm`)
  }
  const algorithm = key.algorithm as { name: string; namedCurve?: string }
  if (algorithm.name === 'RSASSA-PKCS1-v1_5') return 'RS256'
  if (algorithm.name === 'RSA-PSS') return 'PS256'
  if (algorithm.name === 'Ed25519') return 'EdDSA'
  if (algorithm.name === 'ECDSA' && algorithm.namedCurve === 'P-256') return 'ES256'
  if (algorithm.name === 'ECDSA' && algorithm.namedCurve === 'P-384') return 'ES384'
  throw new TypeError(`createToken: cannot tell the algorithm of a ${algorithm.name} key; pass algorithm`)
}

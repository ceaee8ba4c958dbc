import { createPublicKey, type KeyObject } from 'node:crypto'
import { infoClaimProblem, nameClaimProblem, subjectClaimProblem } from '@symphony/node/token-claims'
import { createRemoteJWKSet, errors, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose'
import { LRUCache } from 'lru-cache'
import type { Identity } from '../core/connection.js'
import { AuthError } from '../errors.js'
import { roomMatches } from './room-pattern.js'

export type AuthConfig =
  | { mode: 'none' }
  | {
      mode: 'jwt'
      /** Exactly one of these is set. */
      secret?: string
      publicKeyPem?: string
      jwksUrl?: string
      issuer?: string
      audience?: string
    }

/** Decides who a connection is and what it may do, before the WebSocket upgrade completes. */
export interface Authenticator {
  authenticate(token: string | null, room: string): Promise<Identity>
}

const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
]
/** The subject of a connection without one: no auth, or a token naming no `sub`. */
export const ANONYMOUS_USER = 'anonymous'
const ANONYMOUS_WRITER: Identity = {
  userId: ANONYMOUS_USER,
  name: null,
  info: null,
  access: 'rw',
  expiresAt: null,
}
/** How long a client should wait before asking again while the key source is unreachable. */
const KEYS_UNAVAILABLE_RETRY_AFTER_S = 5
/** The longest a verified token is taken on trust: a key the identity provider withdrew stops counting by then. */
const VERIFIED_TRUST_MS = 10 * 60_000
/** The verified tokens kept, in count and in characters (tokens can be long: a `sub` up to its limit). */
const VERIFIED_TOKENS = 4096
const VERIFIED_TOKEN_CHARS = 4 * 1024 * 1024

export function createAuthenticator(config: AuthConfig): Authenticator {
  if (config.mode === 'none') return { authenticate: async () => ANONYMOUS_WRITER }
  const { key, algorithms } = verificationKey(config)
  const options = {
    algorithms,
    requiredClaims: ['exp', 'room'],
    ...(config.issuer ? { issuer: config.issuer } : {}),
    ...(config.audience ? { audience: config.audience } : {}),
  }
  // A reconnecting crowd presents the same tokens again and again: each verification took about
  // half a millisecond of the event loop (issue 47's attack reconnected a hundred times a second).
  // A token is verified once and trusted until it expires, at most `VERIFIED_TRUST_MS`; what it
  // grants is still checked against each room asked for.
  const verified = new LRUCache<string, JWTPayload>({
    max: VERIFIED_TOKENS,
    maxSize: VERIFIED_TOKEN_CHARS,
    sizeCalculation: (_payload, token) => token.length,
  })
  return {
    async authenticate(token, room) {
      if (!token)
        throw new AuthError(
          'TOKEN_MISSING',
          401,
          'a token is required: the symphony-token subprotocol, Authorization: Bearer (access checks) or ?token=',
        )
      const trusted = verified.get(token)
      // Its `exp` checked on this clock too: the cache's own (monotonic, read at most once per
      // millisecond) may keep an entry a moment past it.
      if (trusted && (trusted.exp ?? 0) * 1000 > Date.now()) return identityFor(trusted, room)
      let payload: JWTPayload
      try {
        // jose picks the overload from the key's type; both shapes verify the same way.
        payload = (await jwtVerify(token, key as JWTVerifyGetKey, options)).payload
      } catch (error) {
        if (error instanceof KeysUnavailable) {
          throw new AuthError(
            'AUTH_UNAVAILABLE',
            503,
            `the token cannot be checked right now: ${error.message}`,
            KEYS_UNAVAILABLE_RETRY_AFTER_S,
          )
        }
        throw new AuthError('TOKEN_INVALID', 401, describeJoseError(error))
      }
      // `exp` is required (a number, or jose refuses the token): trusted no longer than it is valid.
      const ttl = Math.min(VERIFIED_TRUST_MS, (payload.exp ?? 0) * 1000 - Date.now())
      if (ttl > 0 && token.length <= VERIFIED_TOKEN_CHARS / 64) verified.set(token, payload, { ttl })
      return identityFor(payload, room)
    },
  }
}

function verificationKey(config: Extract<AuthConfig, { mode: 'jwt' }>): {
  key: Uint8Array | KeyObject | JWTVerifyGetKey
  algorithms: string[]
} {
  if (config.secret) return { key: hmacKey(config.secret), algorithms: ['HS256'] }
  if (config.publicKeyPem)
    return { key: createPublicKey(config.publicKeyPem), algorithms: ASYMMETRIC_ALGORITHMS }
  if (config.jwksUrl) return { key: remoteKeys(new URL(config.jwksUrl)), algorithms: ASYMMETRIC_ALGORITHMS }
  throw new Error('jwt auth needs a secret, a public key or a JWKS URL')
}

/**
 * The shared secret imported once: given the raw bytes, jose imports a key for every token, which
 * doubles the cost of each connection (and a reconnecting crowd makes many).
 */
function hmacKey(secret: string): JWTVerifyGetKey {
  const key = crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  )
  key.catch(() => {}) // a failed import fails each verification instead: no unhandled rejection
  return () => key
}

/** The identity provider's key set could not be fetched: nothing is known about the token yet. */
class KeysUnavailable extends Error {}

/**
 * Keys from a JWKS URL (jose caches them and refetches for an unknown key id). A fetch that fails,
 * times out, answers other than 200 or with something that is not a key set is an outage of the
 * identity provider, not a verdict on the token: it becomes `KeysUnavailable` (503). Only what
 * the key set says about the token (no key for its id, an unusable key) stays a refusal.
 */
function remoteKeys(url: URL): JWTVerifyGetKey {
  const keys = createRemoteJWKSet(url)
  return async (header, token) => {
    try {
      return await keys(header, token)
    } catch (error) {
      if (
        error instanceof errors.JWKSNoMatchingKey ||
        error instanceof errors.JWKSMultipleMatchingKeys ||
        error instanceof errors.JOSENotSupported ||
        error instanceof errors.JOSEAlgNotAllowed
      ) {
        throw error
      }
      throw new KeysUnavailable(`the key set at ${url.origin} is unreachable (${(error as Error).message})`, {
        cause: error,
      })
    }
  }
}

function identityFor(payload: JWTPayload, room: string): Identity {
  const claim = payload.room
  const patterns = Array.isArray(claim) ? claim : [claim]
  if (!patterns.every((pattern): pattern is string => typeof pattern === 'string')) {
    throw new AuthError('TOKEN_INVALID', 401, 'the room claim must be a string or a list of strings')
  }
  if (!patterns.some((pattern) => roomMatches(pattern, room))) {
    throw new AuthError('ROOM_FORBIDDEN', 403, `the token does not grant room "${room}"`)
  }
  const access = payload.access ?? 'ro'
  if (access !== 'rw' && access !== 'ro') {
    throw new AuthError('TOKEN_INVALID', 401, 'the access claim must be "rw" or "ro"')
  }
  const problem =
    (payload.sub !== undefined && subjectClaimProblem(payload.sub)) ||
    (payload.name !== undefined && nameClaimProblem(payload.name)) ||
    (payload.info !== undefined && infoClaimProblem(payload.info))
  if (problem) throw new AuthError('TOKEN_INVALID', 401, problem)
  return {
    userId: typeof payload.sub === 'string' ? payload.sub : ANONYMOUS_USER,
    name: typeof payload.name === 'string' ? payload.name : null,
    info: (payload.info as Record<string, unknown> | undefined) ?? null,
    access,
    expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : null,
  }
}

function describeJoseError(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'the token has expired'
  if (error instanceof errors.JWTClaimValidationFailed) return `the token's ${error.claim} claim is not valid`
  if (error instanceof errors.JOSEAlgNotAllowed) return "the token's signing algorithm is not accepted"
  if (error instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify"
  return 'the token is not valid'
}

import type { IncomingHttpHeaders } from 'node:http'
import { isProtocolToken, SYMPHONY_PROTOCOL, tokenFromProtocol } from '@symphony/client/wire'
import { AuthError } from '../errors.js'

/**
 * The token of a WebSocket upgrade: from the `symphony-token.<jwt>` subprotocol
 * (`@symphony/client`, kept out of access logs) or from `?token=` (plain y-websocket providers).
 * Both at once is refused, as is a `Sec-WebSocket-Protocol` header that is not a list of
 * subprotocol names, that has more than one token protocol, or a token protocol without
 * `symphony` (the server could select nothing the browser would accept). See
 * `@symphony/client/wire`.
 */
export function upgradeToken(headers: IncomingHttpHeaders, query: URLSearchParams): string | null {
  const header = headers['sec-websocket-protocol']
  const fromHeader = header === undefined ? null : tokenFromProtocolHeader(header)
  return oneToken(fromHeader, query, 'Sec-WebSocket-Protocol')
}

/**
 * The token of an HTTP request (the access check): `Authorization: Bearer <jwt>`
 * (`@symphony/client`) or `?token=`, never both.
 */
export function requestToken(headers: IncomingHttpHeaders, query: URLSearchParams): string | null {
  const header = headers.authorization
  if (header === undefined) return oneToken(null, query, 'Authorization')
  const bearer = /^Bearer +(\S+) *$/i.exec(header)?.[1]
  // Another scheme (Basic from a proxy in front) is not ours: the token is then the query's.
  if (bearer === undefined && query.has('token')) return oneToken(null, query, 'Authorization')
  if (bearer === undefined) {
    throw new AuthError('TOKEN_INVALID', 401, 'the Authorization header must be "Bearer <token>"')
  }
  return oneToken(bearer, query, 'Authorization')
}

/** The names a `Sec-WebSocket-Protocol` header offers, or null when it is not a list of them. */
export function parseProtocolHeader(header: string): string[] | null {
  const names = header.split(',').map((name) => name.replace(/^[ \t]+|[ \t]+$/g, ''))
  if (!names.every(isProtocolToken) || new Set(names).size !== names.length) return null
  return names
}

/**
 * Selects `symphony` when offered; else the first name a client offered for its own use (a
 * provider passing its own `protocols`: browsers fail a handshake whose answer selects none), as
 * servers before the token protocol did; never a token (one cannot come without `symphony`).
 */
export function selectProtocol(offered: ReadonlySet<string>): string | false {
  if (offered.has(SYMPHONY_PROTOCOL)) return SYMPHONY_PROTOCOL
  for (const name of offered) if (tokenFromProtocol(name) === null) return name
  return false
}

function tokenFromProtocolHeader(header: string): string | null {
  const names = parseProtocolHeader(header)
  if (names === null) {
    throw new AuthError(
      'PROTOCOL_INVALID',
      400,
      'the Sec-WebSocket-Protocol header must be a comma-separated list of distinct subprotocol names',
    )
  }
  const tokens = names.map(tokenFromProtocol).filter((token) => token !== null)
  if (tokens.length === 0) return null
  if (tokens.length > 1) throw new AuthError('PROTOCOL_INVALID', 400, 'more than one token subprotocol')
  if (!names.includes(SYMPHONY_PROTOCOL)) {
    throw new AuthError(
      'PROTOCOL_INVALID',
      400,
      `a token subprotocol must be offered together with "${SYMPHONY_PROTOCOL}"`,
    )
  }
  return tokens[0] ?? null
}

function oneToken(fromHeader: string | null, query: URLSearchParams, headerName: string): string | null {
  const fromQuery = query.get('token')
  if (fromHeader !== null && fromQuery !== null) {
    throw new AuthError(
      'TOKEN_AMBIGUOUS',
      400,
      `a token in both ${headerName} and ?token=: send it in one place (the header keeps it out of access logs)`,
    )
  }
  return fromHeader ?? fromQuery
}

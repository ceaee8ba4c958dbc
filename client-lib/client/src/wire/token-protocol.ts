/**
 * How a client hands its token to the server outside the URL, shared by server and client.
 *
 * A URL's query string ends up in load balancer access logs (the ALB logs the whole request
 * line) and in the logs of any proxy on the way; request headers other than a few (User-Agent)
 * do not. The only header a browser lets a page set on a WebSocket is `Sec-WebSocket-Protocol`,
 * so `@symphony/client` offers two subprotocols:
 *
 * - `symphony`: the one the server selects in its answer. Browsers fail a connection whose
 *   answer selects a protocol they did not offer, or none when they offered some; the token
 *   protocol is never selected, so the token is never echoed.
 * - `symphony-token.<jwt>`: the token. A compact JWT is base64url parts joined by dots, all of
 *   them token characters (RFC 7230 `tchar`), which is what RFC 6455 allows in a subprotocol
 *   name and what browsers and `ws` check.
 *
 * Plain y-websocket providers keep sending `?token=`. A request with a token in both places is
 * refused (400 `TOKEN_AMBIGUOUS`) rather than trusting either; so is a token protocol offered
 * without `symphony`, more than one token protocol, or a header that is not a list of tokens
 * (400 `PROTOCOL_INVALID`).
 */

/** The subprotocol the server selects when a client offers it. */
export const SYMPHONY_PROTOCOL = 'symphony'

/** A subprotocol starting with this carries the token after it. */
export const TOKEN_PROTOCOL_PREFIX = 'symphony-token.'

/** RFC 7230 `token`: what RFC 6455 allows in a subprotocol name. */
const TOKEN_CHARACTERS = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/** Whether `value` can be sent as (part of) a subprotocol name. */
export function isProtocolToken(value: string): boolean {
  return TOKEN_CHARACTERS.test(value)
}

/**
 * The subprotocols a client offers for `token`: none without one (the connection then looks
 * like a plain provider's), `symphony` and the token protocol with one. Throws a `TypeError` for
 * a token with characters a subprotocol cannot hold (never the case for a JWT).
 *
 * @example
 * new WebSocket(`${server}/${roomPath(room)}`, offeredProtocols(token))
 */
export function offeredProtocols(token: string | null): string[] {
  if (!token) return []
  if (!isProtocolToken(token)) {
    throw new TypeError('the token is not a JWT: it has characters a Sec-WebSocket-Protocol cannot carry')
  }
  return [SYMPHONY_PROTOCOL, `${TOKEN_PROTOCOL_PREFIX}${token}`]
}

/** The token a subprotocol carries, or null when it is not a token protocol. */
export function tokenFromProtocol(protocol: string): string | null {
  return protocol.startsWith(TOKEN_PROTOCOL_PREFIX) ? protocol.slice(TOKEN_PROTOCOL_PREFIX.length) : null
}

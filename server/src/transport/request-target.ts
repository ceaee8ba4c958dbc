/**
 * Splits a request target (`/room?token=…`) into path and query without `new URL`, which throws
 * on targets such as `//` or `/\` that any client can send.
 */
export function parseRequestTarget(target: string | undefined): { path: string; query: URLSearchParams } {
  const raw = target ?? '/'
  const queryStart = raw.indexOf('?')
  if (queryStart === -1) return { path: raw, query: new URLSearchParams() }
  return { path: raw.slice(0, queryStart), query: new URLSearchParams(raw.slice(queryStart + 1)) }
}

import type { ServerErrorCode } from './wire/error-codes.js'
import { accessCheckPath } from './wire/http-paths.js'

/**
 * The server's answer to "may this token enter this room?".
 *
 * @example
 * if (verdict.kind === 'refused' && verdict.status === 401) askForANewLogin()
 */
export type AccessVerdict =
  | { kind: 'granted' }
  | { kind: 'refused'; status: number; serverCode: ServerErrorCode; message: string }
  /** The server could not be asked (offline, down, or an unexpected answer): treat as transient. */
  | { kind: 'unknown' }

/**
 * Asks `GET <server>/rooms/<room>/access` (the token in `Authorization: Bearer`, never in the
 * URL) why a WebSocket could not open. Browsers hide the HTTP status of a refused upgrade (every
 * failure looks like close code 1006), so this is how the client tells "your token was refused" (stop, report once) from "the server is away" (retry).
 *
 * @example
 * const verdict = await checkAccess('wss://sync.example.com', 'board-1', token)
 * if (verdict.kind === 'refused') console.error(verdict.message)
 */
export async function checkAccess(
  serverUrl: string,
  room: string,
  token: string | null,
  fetchImpl: typeof fetch = fetch,
): Promise<AccessVerdict> {
  const url = new URL(`${httpBase(serverUrl)}${accessCheckPath(room)}`)
  // In a header, not the URL: access logs keep URLs (a page elsewhere asks the server first).
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {}
  try {
    const response = await fetchImpl(url, { cache: 'no-store', headers })
    if (response.ok) return { kind: 'granted' }
    if (response.status !== 401 && response.status !== 403) return { kind: 'unknown' }
    const body = (await response.json().catch(() => null)) as {
      error?: { code?: unknown; message?: unknown }
    } | null
    const serverCode =
      typeof body?.error?.code === 'string' ? (body.error.code as ServerErrorCode) : 'UNAUTHORIZED'
    const message = typeof body?.error?.message === 'string' ? body.error.message : response.statusText
    return { kind: 'refused', status: response.status, serverCode, message }
  } catch {
    return { kind: 'unknown' }
  }
}

/** `ws://host/path` → `http://host/path`, without a trailing slash. */
export function httpBase(serverUrl: string): string {
  return serverUrl.replace(/^ws(s?):/i, 'http$1:').replace(/\/+$/, '')
}

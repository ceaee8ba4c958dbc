/**
 * The claims of a Symphony room token: what `createToken` signs and the server verifies. One
 * module, imported by both, so the limits cannot drift apart.
 *
 * - `room`: an exact room name, a `prefix*` pattern, or a list of them.
 * - `access`: `'rw'` or `'ro'` (default `'ro'`).
 * - `sub`: the user's id in the app (the server binds the Yjs client ids a user writes under to
 *   it); `exp`: when the token stops opening rooms.
 * - `name`, `info`: how the user is shown to operators (the dashboard's sessions view).
 */

/** The longest display name, in Unicode characters. */
export const MAX_NAME_CHARS = 128

/**
 * The longest subject, in Unicode characters: OpenID Connect's own bound on `sub` (255 ASCII
 * characters). The server copies it into every author binding and presence it stamps.
 */
export const MAX_SUBJECT_CHARS = 255

/** The most JSON bytes `info` may take. */
export const MAX_INFO_BYTES = 4096

/** Subjects starting with this are the server's own (REST API writes are `symphony:api`). */
export const RESERVED_SUBJECT_PREFIX = 'symphony:'

/** What is wrong with a `sub` claim, or null if it is fine. */
export function subjectClaimProblem(sub: unknown): string | null {
  if (typeof sub !== 'string') return 'the sub claim must be a string'
  const chars = [...sub].length
  if (chars === 0 || chars > MAX_SUBJECT_CHARS)
    return `the sub claim must be 1-${MAX_SUBJECT_CHARS} characters`
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f-\u009f]/.test(sub)) return 'the sub claim must not contain control characters'
  if (sub.startsWith(RESERVED_SUBJECT_PREFIX)) {
    return `the sub claim may not start with "${RESERVED_SUBJECT_PREFIX}" (the server's own subjects)`
  }
  return null
}

/** What is wrong with a `name` claim, or null if it is fine. */
export function nameClaimProblem(name: unknown): string | null {
  if (typeof name !== 'string') return 'the name claim must be a string'
  const chars = [...name].length
  if (chars === 0 || chars > MAX_NAME_CHARS) return `the name claim must be 1-${MAX_NAME_CHARS} characters`
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return 'the name claim must not contain control characters'
  return null
}

/** What is wrong with an `info` claim, or null if it is fine. */
export function infoClaimProblem(info: unknown): string | null {
  if (info === null || typeof info !== 'object' || Array.isArray(info))
    return 'the info claim must be a JSON object'
  const bytes = new TextEncoder().encode(JSON.stringify(info)).length
  if (bytes > MAX_INFO_BYTES) return `the info claim takes ${bytes} bytes of JSON (at most ${MAX_INFO_BYTES})`
  return null
}

/**
 * Room names: 1–128 Unicode characters (code points), none of them a control character, and no
 * unpaired surrogate (a string that is not valid Unicode). In a URL path the name is
 * percent-encoded (`roomPath`), so `team/doc-42`, `my doc` and `café-ü` are all fine names. Only
 * `.` and `..` are out: URL parsers resolve them as path steps, encoded or not, so no client could
 * reach them.
 *
 * @example
 * ROOM_NAME_PATTERN.test('team/doc-42') // true
 */
export const ROOM_NAME_PATTERN = /^(?!\.\.?$)[^\p{Cc}\p{Cs}]{1,128}$/u

/**
 * What may begin a room name (`GET /api/v1/rooms?prefix=`): up to 128 characters of the same
 * kinds, `.` and `..` included (they begin `.notes`), and the empty prefix.
 *
 * @example
 * ROOM_PREFIX_PATTERN.test('team-7/') // true
 */
export const ROOM_PREFIX_PATTERN = /^[^\p{Cc}\p{Cs}]{0,128}$/u

/**
 * The rule in words, for error messages.
 *
 * @example
 * throw new TypeError(`bad room name: ${ROOM_NAME_RULE}`)
 */
export const ROOM_NAME_RULE =
  'room names are 1-128 Unicode characters without control characters, other than . and ..'

/**
 * Whether `name` is a valid room name; the server refuses any other before the upgrade.
 *
 * @example
 * if (!isValidRoomName(input)) showError(ROOM_NAME_RULE)
 */
export function isValidRoomName(name: unknown): name is string {
  return typeof name === 'string' && ROOM_NAME_PATTERN.test(name)
}

/**
 * The room as one URL path segment (`/` and `%` included, percent-encoded).
 *
 * @example
 * new WebSocket(`wss://sync.example.com/${roomPath('team/doc 42')}`) // …/team%2Fdoc%2042
 */
export function roomPath(name: string): string {
  return encodeURIComponent(name)
}

/** A `%` that starts no escape: such a path is not percent-encoded, it is a raw name. */
const STRAY_PERCENT = /%(?![0-9A-Fa-f]{2})/

/**
 * The room a request path (after the leading `/`, before `?`) names, or null if it names none.
 * Percent-decoded, so it undoes `roomPath`. y-websocket's provider appends the name unencoded
 * (browsers then encode spaces and non-ASCII, but leave `/` and `%` as they are): such a path
 * decodes to the same name, and one with a `%` that starts no escape (`100%`) is taken as it is.
 * A path of valid escapes must decode to UTF-8: `%ED%A0%80` (half a surrogate pair) or `%FF`
 * names no room. Names with `%`, `?`, `#` or `\` only survive the trip encoded, which
 * `@symphony/client` always does.
 *
 * @example
 * roomFromPath('my%20doc/caf%C3%A9') // 'my doc/café'
 */
export function roomFromPath(path: string): string | null {
  if (STRAY_PERCENT.test(path)) return path
  try {
    return decodeURIComponent(path)
  } catch {
    return null // valid escapes of bytes that are not UTF-8
  }
}

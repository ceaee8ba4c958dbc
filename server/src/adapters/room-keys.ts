import { createHash } from 'node:crypto'

/**
 * How stores name a room. Room names are any 1–128 Unicode characters but control characters, so
 * each store encodes them into what it can hold, one to one: no two names share a key, and no name
 * escapes its folder or prefix. Names of the alphabet earlier versions allowed
 * (`[A-Za-z0-9._~:-]`) keep the keys they had in S3 and Redis, so deployed data stays found.
 */

/** The room-name alphabet of earlier versions. */
const LEGACY_NAME = /^[A-Za-z0-9._~:-]+$/

/** ASCII a key keeps as it is; every other ASCII byte is percent-encoded (`%` included). */
const KEY_SAFE_ASCII = /[A-Za-z0-9._~:-]/

/**
 * The room in an S3 key or a Redis key: the safe ASCII above and every non-ASCII character as
 * they are (both stores hold UTF-8), every other ASCII character as `%XX`. So `/` never makes a
 * folder, `{` `}` never break a Redis hash tag, and `%` never starts anything but an escape. At
 * most 512 bytes (128 four-byte characters).
 *
 * @example
 * roomKey('team/doc 42') // 'team%2Fdoc%2042'
 */
export function roomKey(room: string): string {
  // The common case, asked for by every update journaled: nothing to encode.
  if (LEGACY_NAME.test(room)) return room
  let key = ''
  for (const char of room) {
    const code = char.codePointAt(0) ?? 0
    key += code >= 0x80 || KEY_SAFE_ASCII.test(char) ? char : percent(code)
  }
  return key
}

/** Longest encoded file name kept readable; longer ones are hashed (file systems allow 255 bytes). */
const MAX_READABLE_FILE_NAME = 180

/** Names Windows gives to devices, whatever the extension: `con.ybin` would be the console. */
const WINDOWS_DEVICE = /^(?:con|prn|aux|nul|com\d|lpt\d)(?:\.|$)/

/** How a hashed file name ends (see `roomFileName`). */
const HASHED_ENDING = /~[0-9a-f]{64}$/

/**
 * The room as a file name (without extension), for file systems that may fold case (macOS,
 * Windows) or normalize Unicode: only `a-z 0-9 _ -` and `.` (never first) stay, every other byte of
 * the UTF-8 becomes `%XX` with upper-case hex. Upper-case letters are escaped too, so `Doc` and
 * `doc` are two files everywhere, and no name can be `..`, hold a separator or name a Windows
 * device (`con` is `%63on`). A name that would pass 180 bytes becomes its readable start, `~`
 * (which the encoding never produces) and its SHA-256.
 *
 * @example
 * roomFileName('Team/Doc') // '%54eam%2F%44oc'
 */
export function roomFileName(room: string): string {
  let name = ''
  for (const byte of Buffer.from(room, 'utf8')) {
    const literal =
      (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte === 0x5f || byte === 0x2d
    name += literal || (byte === 0x2e && name !== '') ? String.fromCharCode(byte) : percent(byte)
  }
  // Still one to one: percent-decoding the file name gives the room back.
  if (WINDOWS_DEVICE.test(name)) name = `${percent(name.charCodeAt(0))}${name.slice(1)}`
  if (name.length <= MAX_READABLE_FILE_NAME) return name
  const digest = createHash('sha256').update(room, 'utf8').digest('hex')
  return `${name.slice(0, 64).replace(/%[0-9A-F]?$/, '')}~${digest}`
}

/**
 * The file name earlier versions used (`<room>`), or null if they could not have held this room,
 * or if that is a hashed name of today's: moving it would hand another room's file to this one.
 */
export function legacyFileName(room: string): string | null {
  if (!LEGACY_NAME.test(room) || HASHED_ENDING.test(room)) return null
  return roomFileName(room) !== room ? room : null
}

function percent(byte: number): string {
  return `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
}

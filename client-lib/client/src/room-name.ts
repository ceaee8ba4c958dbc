/**
 * Room names: 1–128 characters that need no escaping in a URL path, a file name or an S3 key.
 *
 * @example
 * ROOM_NAME_PATTERN.test('team-7:board.2') // true
 */
export const ROOM_NAME_PATTERN = /^[A-Za-z0-9._~:-]{1,128}$/

/**
 * The rule in words, for error messages.
 *
 * @example
 * throw new TypeError(`bad room name: ${ROOM_NAME_RULE}`)
 */
export const ROOM_NAME_RULE = 'room names are 1-128 characters of A-Z a-z 0-9 . _ ~ : -'

/**
 * Whether `name` is a valid room name; the server refuses any other before the upgrade.
 *
 * @example
 * if (!isValidRoomName(input)) showError(ROOM_NAME_RULE)
 */
export function isValidRoomName(name: string): boolean {
  return ROOM_NAME_PATTERN.test(name)
}

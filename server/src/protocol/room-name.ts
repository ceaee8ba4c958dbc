/** Room names: 1–128 characters that need no escaping in a URL path, a file name or an S3 key. */
export const ROOM_NAME_PATTERN = /^[A-Za-z0-9._~:-]{1,128}$/

export function isValidRoomName(name: string): boolean {
  return ROOM_NAME_PATTERN.test(name)
}

/** lib0's variable-length numbers, for messages written into a buffer of their exact size. */

/** Bytes of a number in lib0's variable-length encoding. */
export function varUintSize(value: number): number {
  let bytes = 1
  for (let rest = value; rest >= 128; rest = Math.floor(rest / 128)) bytes++
  return bytes
}

/** Writes `value` as lib0's variable-length number at `at`; returns where it ends. */
export function writeVarUint(buffer: Uint8Array, at: number, value: number): number {
  let rest = value
  while (rest >= 128) {
    buffer[at++] = 0x80 | (rest % 128)
    rest = Math.floor(rest / 128)
  }
  buffer[at++] = rest
  return at
}

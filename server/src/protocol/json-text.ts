import { countValue, VALUE_COST, type ValueTally } from './value-cost.js'

/**
 * Checks a JSON text in UTF-8 without building it (RFC 8259 grammar). Presence states arrive as
 * JSON and are only stored and forwarded: parsing them cost more than the rest of their handling.
 * Multi-byte characters never contain ASCII bytes, so a byte scan is exact; like a `TextDecoder`,
 * it lets malformed UTF-8 inside strings through (it becomes U+FFFD in every reader).
 */

/**
 * Why `text` is not one JSON value nested at most `maxDepth` deep, or null if it is. With a
 * `tally`, also counts what `JSON.parse` would build of it.
 */
export function jsonTextProblem(text: Uint8Array, maxDepth: number, tally?: ValueTally): string | null {
  const end = skipWhitespace(text, readValue(text, skipWhitespace(text, 0), maxDepth, tally))
  if (end === TOO_DEEP) return `nested deeper than ${maxDepth} levels`
  return end === text.length ? null : 'not a JSON text'
}

/** Whether a text `jsonTextProblem` accepted is the literal `null`. */
export function isJsonNull(text: Uint8Array): boolean {
  return byteAt(text, skipWhitespace(text, 0)) === N
}

// Scanners return the index just past what they read, or one of these (both negative).
const INVALID = -1
const TOO_DEEP = -2

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const MINUS = 0x2d
const PLUS = 0x2b
const DOT = 0x2e
const N = 0x6e
const TRUE = [0x74, 0x72, 0x75, 0x65]
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65]
const NULL = [N, 0x75, 0x6c, 0x6c]

function readValue(text: Uint8Array, i: number, depthLeft: number, tally: ValueTally | undefined): number {
  if (i < 0) return i
  const c = byteAt(text, i)
  switch (c) {
    case 0x7b:
    case 0x5b:
      if (tally) countValue(tally, c === 0x7b ? VALUE_COST.object : VALUE_COST.array)
      return readContainer(text, i, depthLeft, c === 0x7b ? 0x7d : 0x5d, c === 0x7b, tally)
    case QUOTE: {
      const end = readString(text, i)
      if (tally) countValue(tally, end - i > 3 ? VALUE_COST.boxed : 0)
      return end
    }
    case TRUE[0]:
      if (tally) countValue(tally, 0)
      return readLiteral(text, i, TRUE)
    case FALSE[0]:
      if (tally) countValue(tally, 0)
      return readLiteral(text, i, FALSE)
    case N:
      if (tally) countValue(tally, 0)
      return readLiteral(text, i, NULL)
    default: {
      const end = readNumber(text, i)
      // An integer stays in its slot; a fraction or an exponent is a float, boxed.
      if (tally) countValue(tally, end - i > 9 || hasFraction(text, i, end) ? VALUE_COST.boxed : 0)
      return end
    }
  }
}

function hasFraction(text: Uint8Array, from: number, to: number): boolean {
  for (let at = from; at < to; at++)
    if (text[at] === DOT || text[at] === 0x65 || text[at] === 0x45) return true
  return false
}

/** An object (`keyed`) or an array from its opening bracket at `i`; recursion is bounded by depth. */
function readContainer(
  text: Uint8Array,
  i: number,
  depthLeft: number,
  close: number,
  keyed: boolean,
  tally: ValueTally | undefined,
): number {
  if (depthLeft === 0) return TOO_DEEP
  let at = skipWhitespace(text, i + 1)
  if (byteAt(text, at) === close) return at + 1
  for (;;) {
    if (keyed) {
      if (byteAt(text, at) !== QUOTE) return INVALID
      at = skipWhitespace(text, readString(text, at))
      if (at < 0 || byteAt(text, at) !== COLON) return INVALID
      at = skipWhitespace(text, at + 1)
    }
    at = skipWhitespace(text, readValue(text, at, depthLeft - 1, tally))
    if (at < 0) return at
    if (byteAt(text, at) === close) return at + 1
    if (byteAt(text, at) !== COMMA) return INVALID
    at = skipWhitespace(text, at + 1)
  }
}

function readString(text: Uint8Array, i: number): number {
  const end = text.length
  for (let at = i + 1; at < end; ) {
    const c = text[at] as number
    if (c > BACKSLASH || (c > QUOTE && c !== BACKSLASH)) {
      at++ // the common case first: an ordinary character
    } else if (c === QUOTE) {
      return at + 1
    } else if (c < 0x20) {
      return INVALID // control characters must be escaped
    } else if (c !== BACKSLASH) {
      at++
    } else if (isSimpleEscape(byteAt(text, at + 1))) {
      at += 2
    } else if (byteAt(text, at + 1) === 0x75) {
      for (let k = at + 2; k < at + 6; k++) if (!isHexDigit(byteAt(text, k))) return INVALID
      at += 6
    } else {
      return INVALID
    }
  }
  return INVALID
}

function readNumber(text: Uint8Array, i: number): number {
  let at = byteAt(text, i) === MINUS ? i + 1 : i
  if (byteAt(text, at) === 0x30) at++
  else if (isDigit(byteAt(text, at))) at = skipDigits(text, at)
  else return INVALID
  if (byteAt(text, at) === DOT) {
    if (!isDigit(byteAt(text, at + 1))) return INVALID
    at = skipDigits(text, at + 1)
  }
  if (byteAt(text, at) === 0x65 || byteAt(text, at) === 0x45) {
    at++
    if (byteAt(text, at) === PLUS || byteAt(text, at) === MINUS) at++
    if (!isDigit(byteAt(text, at))) return INVALID
    at = skipDigits(text, at)
  }
  return at
}

function readLiteral(text: Uint8Array, i: number, literal: number[]): number {
  for (let k = 0; k < literal.length; k++) if (byteAt(text, i + k) !== literal[k]) return INVALID
  return i + literal.length
}

function skipWhitespace(text: Uint8Array, i: number): number {
  if (i < 0) return i
  let at = i
  for (
    let c = byteAt(text, at);
    c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
    c = byteAt(text, ++at)
  );
  return at
}

function skipDigits(text: Uint8Array, i: number): number {
  let at = i
  while (isDigit(byteAt(text, at))) at++
  return at
}

/** The byte at `i`, or -1 past the end: reading a typed array out of bounds is slow and untyped. */
function byteAt(text: Uint8Array, i: number): number {
  return i < text.length ? (text[i] as number) : -1
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39
}

function isHexDigit(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

/** The characters allowed after a backslash, other than `u`: " \ / b f n r t */
function isSimpleEscape(c: number): boolean {
  return (
    c === 0x22 ||
    c === 0x5c ||
    c === 0x2f ||
    c === 0x62 ||
    c === 0x66 ||
    c === 0x6e ||
    c === 0x72 ||
    c === 0x74
  )
}

/**
 * Room names that every store must keep apart and inside its folder or prefix: slashes, spaces,
 * non-ASCII, path tricks, names that differ only in case, the longest name (128 four-byte
 * characters), glob and hash-tag characters, and percent signs that look like escapes.
 */
export const TRICKY_ROOM_NAMES: readonly string[] = [
  'team/doc-42',
  'my doc',
  'café-ü',
  'cafe\u0301-u\u0308', // the same text decomposed: another name
  '..',
  '.',
  '../../etc/passwd',
  'a\\b',
  'Doc',
  'doc',
  'DOC',
  '😀'.repeat(128),
  `${'😀'.repeat(127)}😁`,
  'x'.repeat(128),
  'a:b*c?[d]{e}}',
  '100%',
  '%41',
  'A',
  'a%2Fb',
  'a/b',
  '~',
  '%7E',
  'CON',
  'con', // a Windows device, as a file name
  'nul.txt',
]

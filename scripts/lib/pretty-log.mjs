// Turns the sync server's JSON log lines (pino) into short human lines for the dev scripts.

/** @type {Partial<Record<string, string>>} */
const LEVELS = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' }
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'serverId'])

/**
 * `[<tag>] <LEVEL> <msg> key=value …` for a JSON log line; any other line is returned unchanged.
 * @param {string} line
 * @param {string} tag
 * @returns {string}
 */
export function prettyLine(line, tag) {
  let entry
  try {
    entry = JSON.parse(line)
  } catch {
    return line
  }
  if (entry === null || typeof entry !== 'object') return line
  const fields = Object.entries(entry)
    .filter(([key]) => !HIDDEN.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'object' ? JSON.stringify(value) : value}`)
  return `[${tag}] ${LEVELS[entry.level] ?? entry.level} ${entry.msg ?? ''} ${fields.join(' ')}`.trimEnd()
}

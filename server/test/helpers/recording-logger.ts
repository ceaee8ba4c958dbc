import type { Logger } from '../../src/logger.js'

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error'
  message: string
  fields: Record<string, unknown>
}

/** A logger that keeps every entry, for tests that assert what was logged (and at what level). */
export function recordingLogger(entries: LogEntry[] = []): Logger & { entries: LogEntry[] } {
  const record =
    (level: LogEntry['level']) =>
    (fields: object | string, message?: string): void =>
      void entries.push(
        typeof fields === 'string'
          ? { level, message: fields, fields: {} }
          : { level, message: message ?? '', fields: fields as Record<string, unknown> },
      )
  const logger = {
    entries,
    debug: record('debug'),
    info: record('info'),
    warn: record('warn'),
    error: record('error'),
    child: () => logger,
  }
  return logger
}

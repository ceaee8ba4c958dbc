import { pino } from 'pino'

type LogFn = {
  (message: string): void
  (fields: object, message?: string): void
}

/** The logging the core needs; pino satisfies it, and tests pass `silentLogger`. */
export interface Logger {
  debug: LogFn
  info: LogFn
  warn: LogFn
  error: LogFn
  child(bindings: Record<string, unknown>): Logger
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'

/** Structured JSON logs on stdout, one line per event. */
export function createLogger(level: LogLevel, bindings: Record<string, unknown> = {}): Logger {
  return pino({ level, base: bindings })
}

export const silentLogger: Logger = createLogger('silent')

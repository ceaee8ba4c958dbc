/** Types for services.mjs, so TypeScript tests can start a Redis of their own. */
export const REDIS_SERVER: string
export function freePort(): Promise<number>
export interface RedisService {
  url: string
  port: number
  readonly pid: number
  restart(): Promise<void>
  start(): Promise<void>
  stop(): Promise<void>
}
export function startRedis(): Promise<RedisService>
export interface MotoService {
  endpoint: string
  port: number
  pid: number
  stop(): Promise<void>
}
export function startMoto(): Promise<MotoService>
export function startPostgres(): Promise<{ url: string; port: number; pid: number; stop(): Promise<void> }>
/** The cfn-lint command in .services/venv. */
export const CFN_LINT: string
/** Installs the pinned cfn-lint into .services/venv when it is missing. */
export function ensureCfnLint(): Promise<void>

import { SNAPSHOTS_URL } from '@symphony/server/snapshots'
import { withUrlPassword } from '@symphony/server/url-password'
import { z } from 'zod'
import { ALLOWED_HOST, type AllowedHosts } from './request-guards.js'

/** A variable that may be unset; blank counts as unset. */
const optionalText = z
  .string()
  .optional()
  .transform((v) => (v?.trim() ? v.trim() : undefined))

/** Every environment variable the dashboard reads, with its default. docs/configuration.md lists them. */
const environment = z.object({
  DASHBOARD_PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DASHBOARD_HOST: z.string().default('0.0.0.0'),
  DATABASE_URL: z
    .string({ error: 'is required: the Postgres the sync servers write metadata to' })
    .refine(
      (v) => /^postgres(ql)?:\/\/./.test(v),
      'must be postgres://… (for embedded PGlite: its PGLITE_PORT URL)',
    ),
  DATABASE_PASSWORD: optionalText,
  DASHBOARD_TOKEN: optionalText.refine((v) => !v || v.length >= 16, 'must be at least 16 characters'),
  DASHBOARD_ALLOWED_HOSTS: optionalText
    .transform((v): AllowedHosts | undefined =>
      v === '*' ? 'any' : v?.split(',').map((entry) => entry.trim().toLowerCase()),
    )
    .refine(
      (v) => v === undefined || v === 'any' || v.every((entry) => ALLOWED_HOST.test(entry)),
      'must be * or host names, each with an optional :port, separated by commas',
    ),
  DASHBOARD_SESSION_HOURS: z.coerce
    .number()
    .min(0.01)
    .max(24 * 30)
    .default(12),
  SNAPSHOTS: SNAPSHOTS_URL,
  AWS_REGION: z.string().default('us-east-1'),
  AWS_ENDPOINT_URL: optionalText,
  INTERNAL_TOKEN: optionalText,
  NODE_ENV: z.string().default('development'),
})

export interface DashboardConfig {
  port: number
  host: string
  databaseUrl: string
  /** Bearer token for the API and the page; null only outside production (then a warning). */
  token: string | null
  /** `Host` names answered besides loopback ones; undefined: the default (any with a token). */
  allowedHosts: AllowedHosts | undefined
  /** How long a sign-in on the page lasts. */
  sessionTtlMs: number
  /** The sync servers' INTERNAL_TOKEN, for reading live rooms' documents. */
  internalToken: string | null
  /** The sync servers' SNAPSHOTS, for rooms no server holds now. */
  snapshots: string
  aws: { region: string; endpoint: string | undefined }
}

/** Reads and checks the environment once, at start-up; throws one clear line. */
export function parseDashboardConfig(env: Record<string, string | undefined>): DashboardConfig {
  const parsed = environment.safeParse(env)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new Error(`${issue?.path.join('.')}: ${issue?.message}`)
  }
  const vars = parsed.data
  if (!vars.DASHBOARD_TOKEN && vars.NODE_ENV === 'production') {
    throw new Error(
      'DASHBOARD_TOKEN: required in production (NODE_ENV=production): the dashboard shows every room',
    )
  }
  return {
    port: vars.DASHBOARD_PORT,
    host: vars.DASHBOARD_HOST,
    databaseUrl: withUrlPassword(vars.DATABASE_URL, vars.DATABASE_PASSWORD),
    token: vars.DASHBOARD_TOKEN ?? null,
    allowedHosts: vars.DASHBOARD_ALLOWED_HOSTS,
    sessionTtlMs: vars.DASHBOARD_SESSION_HOURS * 3_600_000,
    internalToken: vars.INTERNAL_TOKEN ?? null,
    snapshots: vars.SNAPSHOTS,
    aws: { region: vars.AWS_REGION, endpoint: vars.AWS_ENDPOINT_URL },
  }
}

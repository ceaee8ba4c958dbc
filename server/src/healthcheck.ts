/**
 * The container health check (Dockerfile HEALTHCHECK, ECS task definition): exits 0 when this
 * container's server answers `/healthz` with 200 within 3 s, else 1. Shared by the sync server and
 * the dashboard images: `healthcheck.js [VARIABLE] [DEFAULT]` reads the port from that environment
 * variable (PORT), else the default (1234).
 */
const [variable = 'PORT', fallback = '1234'] = process.argv.slice(2)
const port = Number(process.env[variable] ?? fallback)
try {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(3_000) })
  process.exit(response.ok ? 0 : 1)
} catch {
  process.exit(1)
}

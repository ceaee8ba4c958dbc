/**
 * Puts a password into a connection URL. Deployments keep passwords in a secret store that hands
 * them over as their own variable (`DATABASE_PASSWORD`, `PUBSUB_PASSWORD`), not inside a URL; a
 * password may hold characters a URL cannot, so it is percent-encoded (pg and ioredis decode it).
 */
export function withUrlPassword(url: string, password: string | undefined): string {
  if (!password) return url
  const parsed = new URL(url)
  parsed.password = encodeURIComponent(password)
  return parsed.toString()
}

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/**
 * Sign-in sessions for the dashboard page. A session cookie is opaque and expires: a random id,
 * its expiry, and a MAC over both under a key derived from `DASHBOARD_TOKEN`. The token itself
 * never leaves the sign-in form's post, so a leaked cookie is worth one session, not the master
 * token, and ends by itself. Any dashboard task verifies a session without shared state;
 * changing `DASHBOARD_TOKEN` ends every session at once.
 */
export class Sessions {
  readonly #key: Buffer

  constructor(
    token: string,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.#key = createHmac('sha256', 'symphony-dashboard-session').update(token).digest()
  }

  /** A new session's cookie value, and how long it lasts. */
  create(): { value: string; maxAgeMs: number } {
    const id = randomBytes(18).toString('base64url')
    const expires = this.now() + this.ttlMs
    return { value: `${id}.${expires}.${this.#mac(`${id}.${expires}`)}`, maxAgeMs: this.ttlMs }
  }

  /** Whether a cookie value is a session this dashboard issued that has not expired. */
  isValid(value: string): boolean {
    const [id, expires, mac, ...rest] = value.split('.')
    if (!id || !expires || !mac || rest.length > 0) return false
    const expected = Buffer.from(this.#mac(`${id}.${expires}`))
    const given = Buffer.from(mac)
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false
    return Number(expires) > this.now()
  }

  #mac(text: string): string {
    return createHmac('sha256', this.#key).update(text).digest('base64url')
  }
}

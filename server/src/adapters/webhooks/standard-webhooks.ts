import { createHmac } from 'node:crypto'

/**
 * Signs per the Standard Webhooks specification, so a receiver verifies with any of its libraries
 * (`standardwebhooks` on npm): `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`,
 * keyed with the base64 part of a `whsec_…` secret. Hand-written because it is these few lines.
 */
export function signWebhook(secret: Uint8Array, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${id}.${timestampSeconds}.${body}`).digest('base64')
  return `v1,${mac}`
}

/** The key inside `whsec_<base64>`; throws on anything else. */
export function webhookKey(secret: string): Uint8Array {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret)
  const key = match?.[1] ? Buffer.from(match[1], 'base64') : null
  if (!key || key.length < 16)
    throw new Error('WEBHOOK_SECRET must be whsec_ followed by at least 16 bytes of base64')
  return new Uint8Array(key)
}

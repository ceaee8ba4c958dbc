import { isDeepStrictEqual } from 'node:util'
import { eventually } from '../../src/contracts/eventually.js'

export interface Version {
  id: string
  savedAt: string
  bytes: number
}

/** Where a server's REST API is and the secret it wants. */
export interface RestApi {
  httpUrl: string
  apiSecret: string
}

/** `<method> /api/v1/rooms/<room>/versions<rest>` on `api`: the status and the JSON body. */
export async function versionsApi(api: RestApi, room: string, rest = '', method = 'GET') {
  const response = await fetch(`${api.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}/versions${rest}`, {
    method,
    headers: { authorization: `Bearer ${api.apiSecret}` },
  })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

/** The id of the newest of the room's last `limit` saved versions whose document is `json`, or null. */
export async function versionHolding(
  api: RestApi,
  room: string,
  json: unknown,
  limit = 5,
): Promise<string | null> {
  const { body } = await versionsApi(api, room, `?limit=${limit}`)
  for (const version of (body.versions as Version[] | undefined) ?? []) {
    const { body: document } = await versionsApi(api, room, `/${version.id}/document`)
    if (isDeepStrictEqual(document, json)) return version.id // root types come in any order
  }
  return null
}

/** Waits until one of the room's newest versions holds `json` (`versionHolding`), and returns its id. */
export async function savedVersionHolding(
  api: RestApi,
  room: string,
  json: unknown,
  { message = 'the version is saved', timeoutMs = 15_000 } = {},
): Promise<string> {
  let id: string | null = null
  await eventually(
    async () => {
      id = await versionHolding(api, room, json)
      return id !== null
    },
    message,
    timeoutMs,
  )
  return id as unknown as string // eventually returned: set
}

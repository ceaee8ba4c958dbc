import type { ClientOptions } from '@symphony/client'

/** Remembers whether the server had the development token route, for page loads while offline. */
const REMEMBERED = 'symphony-demo:dev-tokens'

/**
 * How the demo authenticates: a `?token=` from the URL, else the server's development token route
 * (on under `AUTH_SECRET=… npm start`), else no token (auth off). A real app's `getToken` calls its
 * own backend, which mints the token with `@symphony/node` for the signed-in user.
 */
export async function demoAuth(
  room: string,
  name: string | null,
): Promise<Pick<ClientOptions, 'token' | 'getToken'>> {
  const given = new URLSearchParams(location.search).get('token')
  if (given) return { token: given }
  const url = `./dev/token?${new URLSearchParams({ room, ...(name ? { name } : {}) })}`
  const getToken = async (): Promise<string> => {
    const response = await fetch(url, { cache: 'no-store' })
    if (!response.ok) throw new Error(`the development token route answered ${response.status}`)
    return ((await response.json()) as { token: string }).token
  }
  let routeOn: boolean
  try {
    const response = await fetch(url, { cache: 'no-store' })
    routeOn = response.status !== 404
    localStorage.setItem(REMEMBERED, String(routeOn))
  } catch {
    routeOn = localStorage.getItem(REMEMBERED) === 'true' // offline: as last time
  }
  return routeOn ? { getToken } : {}
}

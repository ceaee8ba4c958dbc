import type { NextFunction, Request, Response } from 'express'
import { ApiError } from './app-error.js'

/**
 * The `Host` names the dashboard answers besides loopback names (`localhost`, `127.x.x.x`,
 * `[::1]`, which it always answers): `'any'`, or names, each matching any port, or `name:port`
 * matching that port written out. Lower case.
 */
export type AllowedHosts = 'any' | readonly string[]

/** One `DASHBOARD_ALLOWED_HOSTS` entry: a DNS name or an IP address (IPv6 in brackets), perhaps a port. */
export const ALLOWED_HOST =
  /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/

/**
 * Refuses a request whose `Host` header the dashboard was not told it is reached by: 421
 * `HOST_NOT_ALLOWED`. A page using DNS rebinding points its own name at the dashboard's address,
 * so its requests are same-origin to the browser, but carry the page's name as `Host`. Only the
 * raw header counts (never `X-Forwarded-Host`, which such a page may set). Loopback names are
 * always answered: no page on another site can be served under them.
 */
export function checkHost(allowed: AllowedHosts) {
  return (request: Request, _response: Response, next: NextFunction) => {
    const host = (request.headers.host ?? '').toLowerCase()
    if (allowed === 'any' || isAllowedHost(host, allowed)) return next()
    next(
      new ApiError(
        421,
        'HOST_NOT_ALLOWED',
        `the dashboard does not answer to Host "${host.slice(0, 100)}": open it at localhost, or add the name to DASHBOARD_ALLOWED_HOSTS`,
      ),
    )
  }
}

/** Methods that change nothing (the API's reads and its event stream). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Refuses a request that may change something (`POST`, `DELETE`, …) sent by a page of another
 * origin, same-site or not: 403 `CROSS_SITE_REQUEST`. A browser says so in `Sec-Fetch-Site`, and
 * in `Origin` (which must name this `Host`); a request carrying neither is not a browser's and
 * goes on to the token check.
 */
export function refuseCrossSite() {
  return (request: Request, _response: Response, next: NextFunction) => {
    if (SAFE_METHODS.has(request.method)) return next()
    const site = request.get('sec-fetch-site')
    const origin = request.get('origin')
    const host = (request.headers.host ?? '').toLowerCase()
    const bySite = site === undefined || site === 'same-origin' || site === 'none'
    // `Origin: null` hides the origin (a no-referrer policy, a sandbox): only Sec-Fetch-Site can
    // vouch for it. Browsers send Sec-Fetch-Site only to HTTPS and loopback origins; over plain
    // HTTP elsewhere, Origin alone decides (the page's Referrer-Policy keeps it on its own requests).
    const byOrigin =
      origin === undefined || (origin === 'null' ? site === 'same-origin' : sameHost(origin, host))
    if (bySite && byOrigin) return next()
    next(
      new ApiError(
        403,
        'CROSS_SITE_REQUEST',
        'the dashboard takes changes only from its own page (Origin and Sec-Fetch-Site say another site)',
      ),
    )
  }
}

function isAllowedHost(host: string, allowed: readonly string[]): boolean {
  const name = host.replace(/:\d+$/, '')
  return isLoopbackName(name) || allowed.includes(name) || allowed.includes(host)
}

function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(name)
}

/** Whether the origin `origin` names `host`. */
function sameHost(origin: string, host: string): boolean {
  try {
    return new URL(origin).host === host
  } catch {
    return false
  }
}

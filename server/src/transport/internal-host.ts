import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'

/**
 * The host other servers reach this one at: configured, else this task's private IP from the ECS
 * task metadata endpoint (Fargate sets ECS_CONTAINER_METADATA_URI_V4), else the first non-loopback
 * IPv4 address, else loopback.
 */
export async function discoverInternalHost(configured: string | undefined, metadataUri: string | undefined) {
  if (configured) return configured
  if (metadataUri) return hostFromTaskMetadata(metadataUri)
  const addresses = Object.values(networkInterfaces()).flat()
  return addresses.find((a) => a && a.family === 'IPv4' && !a.internal)?.address ?? '127.0.0.1'
}

interface TaskMetadata {
  Containers?: { Networks?: { IPv4Addresses?: string[] }[] }[]
}

async function hostFromTaskMetadata(metadataUri: string): Promise<string> {
  const response = await fetch(`${metadataUri}/task`, { signal: AbortSignal.timeout(5_000) })
  if (!response.ok) throw new Error(`ECS task metadata answered ${response.status}`)
  const task = (await response.json()) as TaskMetadata
  for (const container of task.Containers ?? []) {
    for (const network of container.Networks ?? []) {
      const address = network.IPv4Addresses?.[0]
      if (address) return address
    }
  }
  throw new Error('ECS task metadata lists no IPv4 address')
}

/**
 * The one address a server listening on `host` is reachable at, as a URL host; undefined when
 * it listens on every interface (any spelling of the unspecified address), to be discovered.
 */
export function boundAddress(host: string): string | undefined {
  if (host === '' || host === '0.0.0.0') return undefined
  if (isIP(host.split('%')[0] ?? '') !== 6) return host
  const [address = '', zone] = host.split('%')
  if (new URL(`http://[${address}]/`).hostname === '[::]') return undefined
  return zone === undefined ? `[${address}]` : `[${address}%25${zone}]`
}

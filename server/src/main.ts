import { fileURLToPath } from 'node:url'
import { createAdapters } from './adapters/create-adapters.js'
import { parseConfig } from './config.js'
import { ConfigError } from './errors.js'
import { createLogger } from './logger.js'
import { SERVER_VERSION } from './server-version.js'
import { SyncServer } from './sync-server.js'
import { discoverInternalHost } from './transport/internal-host.js'

let config: ReturnType<typeof parseConfig>
try {
  config = parseConfig(process.env)
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(`symphony: configuration error: ${error.message}`)
  process.exit(1)
}

const logger = createLogger(config.logLevel, { serverId: config.serverId })
if (config.auth.mode === 'none') {
  logger.warn('AUTH=none: anyone can read and write every room. Set AUTH_SECRET (or a key) in production.')
}

if (config.devTokenSecret) {
  logger.warn(
    'DEV_TOKEN_ROUTE=1: GET /dev/token gives an edit token for any room to anyone. For development only.',
  )
}

const internal = config.internal
const server = await SyncServer.start({
  port: config.port,
  host: config.host,
  serverId: config.serverId,
  auth: config.auth,
  limits: config.limits,
  allowedOrigins: config.allowedOrigins,
  snapshot: { intervalMs: config.snapshotIntervalMs, retryBaseMs: 1_000, retryMaxMs: 30_000 },
  roomGraceMs: config.roomGraceMs,
  antiEntropyIntervalMs: config.antiEntropyIntervalMs,
  metadataSampleIntervalMs: config.metadataSampleIntervalMs,
  shutdownTimeoutMs: config.shutdownTimeoutMs,
  internal: internal && {
    port: internal.port,
    token: internal.token,
    fetchTimeoutMs: config.peerFetchTimeoutMs,
    advertisedHost: await discoverInternalHost(internal.host, process.env.ECS_CONTAINER_METADATA_URI_V4),
  },
  createAdapters: (self, probes) => createAdapters(config, self, logger, probes),
  build: { version: SERVER_VERSION, commit: config.commit },
  logger,
  demoFolder: fileURLToPath(new URL('./demo/', import.meta.url)),
  devTokenSecret: config.devTokenSecret,
  apiSecret: config.apiSecret,
})
logger.info(
  { port: server.port, internalAddress: server.internalAddress, url: `http://localhost:${server.port}/` },
  'listening',
)

let stopping = false
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down')
    setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out; exiting')
      process.exit(1)
    }, config.shutdownTimeoutMs).unref()
    server.shutdown().then(
      (unsaved) => process.exit(unsaved.length > 0 ? 1 : 0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  })
}

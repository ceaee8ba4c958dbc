#!/usr/bin/env node
// The sync server as a process: read the environment, start the server, stop on SIGTERM/SIGINT.
// Everything else is the library's (`createSyncServer`), which embeds the same server.
import { fileURLToPath } from 'node:url'
import { type Config, configWarnings, parseConfig } from './config.js'
import { createSyncServer } from './create-sync-server.js'
import { ConfigError } from './errors.js'
import { createLogger } from './logger.js'

let config: Config
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

for (const warning of configWarnings(config)) logger.warn(warning)

if (config.devTokenSecret) {
  logger.warn(
    'DEV_TOKEN_ROUTE=1: GET /dev/token gives an edit token for any room to anyone. For development only.',
  )
}

const server = await createSyncServer({
  ...config,
  logger,
  demoFolder: fileURLToPath(new URL('./demo/', import.meta.url)),
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

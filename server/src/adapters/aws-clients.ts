import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { S3Client } from '@aws-sdk/client-s3'
import { type AwsClientOptions, DEFAULT_AWS_HTTP } from '../backends.js'
import { connectTimeoutAgents } from './connect-timeout-agent.js'
import { IdleTimeoutHandler } from './idle-timeout-handler.js'

export interface AwsClients {
  s3: S3Client
  dynamo: DynamoDBClient
}

/**
 * The SDK's HTTP handler, set so that a slow store delays a call and never fails it early:
 * - Its own `connectionTimeout` also runs while a request waits for one of the agent's sockets,
 *   so a burst of room loads beyond `maxSockets` (50 by default) failed in 3 s without ever
 *   reaching the store (issue #37). The connect timeout lives in the agent instead, and covers
 *   the TCP connect only.
 * - Its `requestTimeout` only logs a warning unless `throwOnRequestTimeout` is set: without it an
 *   endpoint that accepts and never answers would hang room loads and unloads for good.
 * - `requestTimeout` bounds the whole call, so it must allow the biggest snapshot on a slow link;
 *   `socketTimeout` bounds silence, so a request dropped on the way (a link that loses packets)
 *   fails within it instead: a save hung for a minute held the room's deletion and its joiners
 *   that long (issue #37's fault suite). It applies to small requests only (`IdleTimeoutHandler`).
 * Failed calls are retried (the SDK's attempts, then the core's backoff).
 */
function requestHandler(options: AwsClientOptions) {
  const { httpAgent, httpsAgent } = connectTimeoutAgents({
    maxSockets: options.maxSockets ?? DEFAULT_AWS_HTTP.maxSockets,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_AWS_HTTP.connectTimeoutMs,
  })
  return new IdleTimeoutHandler({
    httpAgent,
    httpsAgent,
    requestTimeout: options.requestTimeoutMs ?? DEFAULT_AWS_HTTP.requestTimeoutMs,
    throwOnRequestTimeout: true,
    socketTimeout: options.idleTimeoutMs ?? DEFAULT_AWS_HTTP.idleTimeoutMs,
  })
}

/** An S3 client; credentials come from the SDK's default chain (task role on ECS, environment elsewhere). */
export function createS3Client(options: AwsClientOptions): S3Client {
  const endpoint = options.s3Endpoint ?? options.endpoint
  // Emulators serve every bucket on one host, so bucket names go in the path, not the host name.
  return new S3Client({
    region: options.region,
    requestHandler: requestHandler(options),
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
  })
}

/** A DynamoDB client, credentials as for S3 (the registry's waits are bounded by the core, `REGISTRY_WAIT_MS`). */
export function createDynamoClient(options: AwsClientOptions): DynamoDBClient {
  const endpoint = options.dynamoEndpoint ?? options.endpoint
  return new DynamoDBClient({
    region: options.region,
    requestHandler: requestHandler(options),
    ...(endpoint ? { endpoint } : {}),
  })
}

/** Both clients, for scripts and tests that provision or inspect a bucket and a table. */
export function createAwsClients(options: AwsClientOptions): AwsClients {
  return { s3: createS3Client(options), dynamo: createDynamoClient(options) }
}

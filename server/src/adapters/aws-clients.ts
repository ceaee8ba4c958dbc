import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { S3Client } from '@aws-sdk/client-s3'
import type { AwsClientOptions } from '../backends.js'

export interface AwsClients {
  s3: S3Client
  dynamo: DynamoDBClient
}

// The SDK waits forever by default: an endpoint that accepts and never answers would hang room
// loads and unloads. Failed calls are retried (the SDK's attempts, then the core's backoff).
const requestHandler = { connectionTimeout: 3_000, requestTimeout: 15_000 }

/** An S3 client; credentials come from the SDK's default chain (task role on ECS, environment elsewhere). */
export function createS3Client(options: AwsClientOptions): S3Client {
  const endpoint = options.s3Endpoint ?? options.endpoint
  // Emulators serve every bucket on one host, so bucket names go in the path, not the host name.
  return new S3Client({
    region: options.region,
    requestHandler,
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
  })
}

/** A DynamoDB client, credentials as for S3; the registry's calls are small, so they time out sooner. */
export function createDynamoClient(options: AwsClientOptions): DynamoDBClient {
  const endpoint = options.dynamoEndpoint ?? options.endpoint
  return new DynamoDBClient({
    region: options.region,
    requestHandler: { ...requestHandler, requestTimeout: 5_000 },
    ...(endpoint ? { endpoint } : {}),
  })
}

/** Both clients, for scripts and tests that provision or inspect a bucket and a table. */
export function createAwsClients(options: AwsClientOptions): AwsClients {
  return { s3: createS3Client(options), dynamo: createDynamoClient(options) }
}

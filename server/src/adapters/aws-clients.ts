import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { S3Client } from '@aws-sdk/client-s3'

export interface AwsClientOptions {
  region: string
  /** An emulator's URL (tests, local runs); unset for AWS itself. */
  endpoint?: string
  /** Per-service overrides of `endpoint` (AWS's own AWS_ENDPOINT_URL_<SERVICE> convention). */
  s3Endpoint?: string
  dynamoEndpoint?: string
}

export interface AwsClients {
  s3: S3Client
  dynamo: DynamoDBClient
}

/**
 * The S3 and DynamoDB clients the adapters share. Credentials come from the SDK's default chain
 * (task role on ECS, environment variables elsewhere).
 */
export function createAwsClients(options: AwsClientOptions): AwsClients {
  const { region } = options
  const s3Endpoint = options.s3Endpoint ?? options.endpoint
  const dynamoEndpoint = options.dynamoEndpoint ?? options.endpoint
  // The SDK waits forever by default: an endpoint that accepts and never answers would hang room
  // loads and unloads. Failed calls are retried (the SDK's attempts, then the core's backoff).
  const requestHandler = { connectionTimeout: 3_000, requestTimeout: 15_000 }
  return {
    // Emulators serve every bucket on one host, so bucket names go in the path, not the host name.
    s3: new S3Client({
      region,
      requestHandler,
      ...(s3Endpoint ? { endpoint: s3Endpoint, forcePathStyle: true } : {}),
    }),
    dynamo: new DynamoDBClient({
      region,
      requestHandler: { ...requestHandler, requestTimeout: 5_000 },
      ...(dynamoEndpoint ? { endpoint: dynamoEndpoint } : {}),
    }),
  }
}

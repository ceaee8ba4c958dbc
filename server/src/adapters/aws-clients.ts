import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { S3Client } from '@aws-sdk/client-s3'

export interface AwsClientOptions {
  region: string
  /** An emulator's URL (tests, local runs); unset for AWS itself. */
  endpoint?: string
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
  const { region, endpoint } = options
  return {
    // Emulators serve every bucket on one host, so bucket names go in the path, not the host name.
    s3: new S3Client(endpoint ? { region, endpoint, forcePathStyle: true } : { region }),
    dynamo: new DynamoDBClient(endpoint ? { region, endpoint } : { region }),
  }
}

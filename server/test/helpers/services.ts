import { randomBytes } from 'node:crypto'
import { type AwsClients, createAwsClients } from '../../src/adapters/aws-clients.js'

export interface TestServices {
  /** Redis for the journal, e.g. `redis://127.0.0.1:6390`. */
  redisUrl: string
  /** The AWS emulator (S3 + DynamoDB) the real adapters are pointed at. */
  awsEndpoint: string
  /** A real PostgreSQL server, e.g. `postgres://postgres:<password>@127.0.0.1:5439/postgres`. */
  databaseUrl: string
}

/**
 * The network services the real adapters are tested against, from the variables `npm test`
 * sets once it has started them. Throws when one is missing: a suite that skipped itself would
 * pass without testing anything.
 */
export function requireTestServices(): TestServices {
  const redisUrl = process.env.SYMPHONY_TEST_REDIS_URL
  const awsEndpoint = process.env.SYMPHONY_TEST_AWS_ENDPOINT_URL
  const databaseUrl = process.env.SYMPHONY_TEST_DATABASE_URL
  const missing = [
    redisUrl ? null : 'SYMPHONY_TEST_REDIS_URL',
    awsEndpoint ? null : 'SYMPHONY_TEST_AWS_ENDPOINT_URL',
    databaseUrl ? null : 'SYMPHONY_TEST_DATABASE_URL',
  ].filter((name) => name !== null)
  if (!redisUrl || !awsEndpoint || !databaseUrl) {
    throw new Error(
      `${missing.join(', ')} not set: run through npm test, which starts Redis, Postgres and the AWS emulator`,
    )
  }
  return { redisUrl, awsEndpoint, databaseUrl }
}

let clients: AwsClients | null = null

/** One pair of clients on the emulator for the whole test file; `destroyTestAwsClients` ends them. */
export function testAwsClients(): AwsClients {
  const { awsEndpoint } = requireTestServices()
  clients ??= createAwsClients({ region: process.env.AWS_REGION ?? 'us-east-1', endpoint: awsEndpoint })
  return clients
}

/** Closes the clients' keep-alive sockets, so the test process can exit. */
export function destroyTestAwsClients(): void {
  clients?.s3.destroy()
  clients?.dynamo.destroy()
  clients = null
}

/** A name no other run (or concurrent test process) uses: `<base>-<pid>-<random>`. */
export function uniqueName(base: string): string {
  return `${base}-${process.pid}-${randomBytes(4).toString('hex')}`
}

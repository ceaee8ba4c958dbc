import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { CreateBucketCommand, PutBucketVersioningCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { destroyTestAwsClients, testAwsClients, uniqueName } from './helpers/services.js'

after(() => destroyTestAwsClients())

/**
 * The tests stand moto in for S3, and the servers rely on S3's conditional writes being atomic:
 * of two writes expecting the same version the first to finish wins, the other is refused (a save
 * racing a deletion's tombstone must never overwrite it). moto checks, then writes, with nothing
 * between two requests; `scripts/lib/moto-server.py` runs it with each PutObject alone.
 */
describe("the tests' S3 (moto)", () => {
  it('lets only one of two conditional writes on one version through, as S3 does', async () => {
    const { s3 } = testAwsClients()
    const Bucket = uniqueName('atomic').toLowerCase()
    await s3.send(new CreateBucketCommand({ Bucket }))
    await s3.send(new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: 'Enabled' } }))
    let bothWon = 0
    const rounds = 250 // without the lock, both won in about 1 round of 35
    for (let round = 0; round < rounds; round++) {
      const { ETag } = await s3.send(new PutObjectCommand({ Bucket, Key: 'k', Body: `base ${round}` }))
      const writes = [1, 2].map((n) =>
        s3.send(new PutObjectCommand({ Bucket, Key: 'k', Body: 'x'.repeat(4756 + n), IfMatch: ETag })),
      )
      const outcomes = await Promise.allSettled(writes)
      if (outcomes.every((outcome) => outcome.status === 'fulfilled')) bothWon++
    }
    assert.equal(bothWon, 0, `both writes won in ${bothWon} of ${rounds} rounds`)
  })
})

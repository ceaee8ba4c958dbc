import {
  type BucketLocationConstraint,
  CreateBucketCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { SnapshotConflictError } from '../errors.js'
import type {
  SnapshotHead,
  SnapshotStore,
  SnapshotVersionPage,
  StoredSnapshot,
} from '../ports/snapshot-store.js'
import { refusedSave } from './refused-save.js'
import { roomKey } from './room-keys.js'
import { listObjectVersions, readObjectVersion } from './s3-snapshot-versions.js'
import {
  decodeSnapshotFile,
  encodeSnapshotFile,
  type SnapshotFileContents,
  storedSnapshotOf,
} from './snapshot-format.js'

/** Object metadata (`x-amz-meta-…`): the room's incarnation, whether the object is its tombstone, its epoch. */
const GENERATION = 'symphony-generation'
const DELETED = 'symphony-deleted'
/** The epoch of the room's owner that saved it (absent: none). */
const EPOCH = 'symphony-epoch'
/** Saves landing between a deletion's read and its write; past this many the deletion fails (and is retried by its caller). */
const MAX_DELETE_ATTEMPTS = 8

export interface S3SnapshotStoreOptions {
  bucket: string
  /** Prepended to `<room>.ybin`; include the trailing `/` for a folder. */
  prefix: string
  client: S3Client
}

/**
 * `SnapshotStore` in S3: one `<prefix><room>.ybin` object per room, its ETag the version. A PUT
 * replaces the object whole, so a reader sees one complete version or the other, never a mix, and
 * it is conditional (`If-Match` on the expected ETag, `If-None-Match: *` when none is expected),
 * so S3 refuses a save that would replace bytes the saver has not merged. Failures are retried
 * by the SDK (its `maxAttempts`) and then by the core's SnapshotWriter, which counts them.
 * Old versions are the bucket's object versions (`s3-snapshot-versions.ts`): a bucket without
 * versioning lists only the current one.
 */
export class S3SnapshotStore implements SnapshotStore {
  constructor(private readonly options: S3SnapshotStoreOptions) {}

  async load(room: string): Promise<StoredSnapshot | null> {
    const Key = this.#key(room)
    let output: GetObjectCommandOutput
    try {
      output = await this.options.client.send(new GetObjectCommand({ Bucket: this.options.bucket, Key }))
    } catch (error) {
      if (isNotFound(error)) return null
      throw this.#error(`could not load ${Key}`, error)
    }
    const head = this.#headOf(Key, output)
    if (!output.Body) throw new Error(`S3 returned no body for s3://${this.options.bucket}/${Key}`)
    let bytes: Uint8Array
    try {
      bytes = await output.Body.transformToByteArray()
    } catch (error) {
      throw this.#error(`could not read ${Key}`, error)
    }
    // The SDK may hand back a Buffer; the port promises a plain Uint8Array (a view, not a copy).
    const plain =
      Object.getPrototypeOf(bytes) === Uint8Array.prototype
        ? bytes
        : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    // The bytes carry the incarnation and epoch too (authoritative; the metadata serves `head`).
    return storedSnapshotOf(decodeSnapshotFile(plain), head.version)
  }

  async head(room: string): Promise<SnapshotHead | null> {
    const Key = this.#key(room)
    try {
      const output = await this.options.client.send(
        new HeadObjectCommand({ Bucket: this.options.bucket, Key }),
      )
      return this.#headOf(Key, output)
    } catch (error) {
      if (isNotFound(error)) return null
      throw this.#error(`could not read the head of ${Key}`, error)
    }
  }

  async save(
    room: string,
    state: Uint8Array,
    expected: string | null,
    generation = 0,
    epoch = 0,
  ): Promise<string> {
    try {
      return await this.#put(room, { state, generation, deleted: false, epoch }, expected)
    } catch (error) {
      // Refused for its version: by a later owner's save, this owner is stale.
      if (!(error instanceof SnapshotConflictError) || epoch === 0) throw error
      throw refusedSave(room, await this.head(room), expected, epoch)
    }
  }

  async listVersions(
    room: string,
    options: { limit: number; cursor?: string | null },
  ): Promise<SnapshotVersionPage> {
    return listObjectVersions(this.#target(room), options)
  }

  async readVersion(room: string, id: string): Promise<StoredSnapshot> {
    const { bytes, head } = await readObjectVersion(this.#target(room), id)
    this.#headOf(this.#key(room), head) // checks its metadata as `load` does
    return storedSnapshotOf(decodeSnapshotFile(bytes), id)
  }

  /** Read, then replaced on that very version, so a save landing in between is not lost unseen. */
  async delete(room: string, generation: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.head(room)
      if (current && current.generation > generation) return
      try {
        await this.#put(
          room,
          { state: new Uint8Array(), generation, deleted: true },
          current?.version ?? null,
        )
        return
      } catch (error) {
        // A save landed in between: read again and replace that (a few times at most).
        if (!(error instanceof SnapshotConflictError) || attempt >= MAX_DELETE_ATTEMPTS) throw error
        await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** attempt * Math.random()))
      }
    }
  }

  /**
   * One conditional PUT. The bytes hold the incarnation (`encodeSnapshotFile`), so S3's version tag
   * (an MD5 of them) never repeats across incarnations or between a snapshot and a tombstone.
   */
  async #put(room: string, contents: SnapshotFileContents, expected: string | null): Promise<string> {
    const { generation, deleted, epoch = 0 } = contents
    const Body = encodeSnapshotFile(contents)
    const Key = this.#key(room)
    let version: string | undefined
    try {
      const output = await this.options.client.send(
        new PutObjectCommand({
          Bucket: this.options.bucket,
          Key,
          Body,
          ContentType: 'application/octet-stream',
          Metadata: {
            [GENERATION]: String(generation),
            ...(deleted ? { [DELETED]: 'true' } : {}),
            ...(epoch > 0 ? { [EPOCH]: String(epoch) } : {}),
          },
          ...(expected === null ? { IfNoneMatch: '*' } : { IfMatch: expected }),
        }),
      )
      version = output.ETag
    } catch (error) {
      if (isConflict(error)) {
        throw new SnapshotConflictError(`${Key} is no longer at version ${expected}`, { cause: error })
      }
      throw this.#error(`could not save ${Key}`, error)
    }
    if (!version) throw new Error(`S3 returned no ETag for s3://${this.options.bucket}/${Key}`)
    return version
  }

  /** The version, incarnation and tombstone flag of an object (objects of earlier versions: 0). */
  #headOf(
    Key: string,
    output: { ETag?: string | undefined; Metadata?: Record<string, string> | undefined },
  ): SnapshotHead {
    if (!output.ETag) throw new Error(`S3 returned no ETag for s3://${this.options.bucket}/${Key}`)
    const generation = Number(output.Metadata?.[GENERATION] ?? 0)
    if (!Number.isSafeInteger(generation) || generation < 0)
      throw new Error(`s3://${this.options.bucket}/${Key} has a bad ${GENERATION}`)
    const deleted = output.Metadata?.[DELETED] === 'true'
    const epoch = Number(output.Metadata?.[EPOCH] ?? 0)
    if (!Number.isSafeInteger(epoch) || epoch < 0)
      throw new Error(`s3://${this.options.bucket}/${Key} has a bad ${EPOCH}`)
    return {
      version: output.ETag,
      generation,
      ...(deleted ? { deleted: true } : {}),
      ...(epoch > 0 ? { epoch } : {}),
    }
  }

  /** The client belongs to whoever created it (it may serve other adapters). */
  async close(): Promise<void> {}

  #target(room: string) {
    return { client: this.options.client, bucket: this.options.bucket, key: this.#key(room), room }
  }

  #key(room: string): string {
    return `${this.options.prefix}${roomKey(room)}.ybin`
  }

  #error(message: string, cause: unknown): Error {
    const reason = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)
    return new Error(`S3 bucket ${this.options.bucket}: ${message} (${reason})`, { cause })
  }
}

/**
 * NoSuchKey, or a 404 whose body named no error (some emulators and proxies). A missing bucket is
 * also a 404 but must fail: treating it as "never saved" would start every room empty.
 */
function isNotFound(error: unknown): boolean {
  const { name, $metadata } = error as { name?: string; $metadata?: { httpStatusCode?: number } }
  if (name === 'NoSuchBucket') return false
  return name === 'NoSuchKey' || $metadata?.httpStatusCode === 404
}

/**
 * The stored object is not the expected version: 412 (another ETag, or one where none was
 * expected), 409 (a concurrent conditional write won), or a 404 for `If-Match` (it was deleted).
 */
function isConflict(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
  return status === 412 || status === 409 || (status === 404 && (error as Error).name !== 'NoSuchBucket')
}

/**
 * Creates the bucket unless this account already owns it. For scripts and tests; deployments
 * create the bucket with the infrastructure.
 */
export async function createSnapshotBucket(client: S3Client, bucket: string): Promise<void> {
  const region = await client.config.region()
  try {
    await client.send(
      new CreateBucketCommand({
        Bucket: bucket,
        // us-east-1 is the default location and refuses to be named as a constraint.
        ...(region === 'us-east-1'
          ? {}
          : { CreateBucketConfiguration: { LocationConstraint: region as BucketLocationConstraint } }),
      }),
    )
  } catch (error) {
    if ((error as Error).name !== 'BucketAlreadyOwnedByYou') throw error
  }
  // As the deployed bucket (infra/lib/storage.ts): every save keeps the one it replaced.
  await client.send(
    new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }),
  )
}

import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  type ListObjectVersionsCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3'
import {
  checkVersionsLimit,
  type SnapshotVersion,
  type SnapshotVersionPage,
  VERSION_ID_PATTERN,
} from '../ports/snapshot-store.js'
import { TOMBSTONE_FILE_BYTES } from './snapshot-format.js'
import { versionNotFound } from './snapshot-versions.js'

/** One room's object in the bucket. */
export interface ObjectTarget {
  client: S3Client
  bucket: string
  key: string
  room: string
}

/**
 * A page of the object's versions, newest first, as S3 lists them. The listing takes a key prefix:
 * other rooms' keys may start with this one's, and sort after it, so the page stops at the first
 * version of another key. A version's id is S3's VersionId in base64url (S3 does not promise a
 * URL-safe alphabet); a cursor is the last id of the page before.
 */
export async function listObjectVersions(
  { client, bucket, key, room }: ObjectTarget,
  { limit, cursor }: { limit: number; cursor?: string | null },
): Promise<SnapshotVersionPage> {
  checkVersionsLimit(limit)
  const marker = cursor == null ? null : versionIdOf(cursor)
  if (cursor != null && marker === null) throw versionNotFound(room, cursor)
  let output: ListObjectVersionsCommandOutput
  try {
    output = await client.send(
      new ListObjectVersionsCommand({
        Bucket: bucket,
        Prefix: key,
        MaxKeys: limit,
        ...(marker === null ? {} : { KeyMarker: key, VersionIdMarker: marker }),
      }),
    )
  } catch (error) {
    if (status(error) === 400 || status(error) === 404) {
      if (cursor != null && (error as Error).name !== 'NoSuchBucket') throw versionNotFound(room, cursor)
    }
    throw new Error(`S3 bucket ${bucket}: could not list the versions of ${key}`, { cause: error })
  }
  const versions: SnapshotVersion[] = []
  for (const entry of output.Versions ?? []) {
    if (entry.Key !== key || !entry.VersionId) continue
    versions.push({
      id: idOf(entry.VersionId),
      savedAt: entry.LastModified ?? new Date(0),
      bytes: entry.Size ?? 0,
    })
  }
  // A tombstone is a bare header: only objects of that size are asked for their metadata.
  for (const version of versions) {
    if (version.bytes !== TOMBSTONE_FILE_BYTES) continue
    const head = await client.send(
      new HeadObjectCommand({ Bucket: bucket, Key: key, VersionId: versionIdOf(version.id) ?? '' }),
    )
    if (head.Metadata?.['symphony-deleted'] === 'true') version.deleted = true
  }
  const more = output.IsTruncated === true && output.NextKeyMarker === key && versions.length > 0
  return { versions, nextCursor: more ? (versions.at(-1)?.id ?? null) : null }
}

/** One version's bytes and metadata; `versionNotFound` if S3 holds no such version of the key. */
export async function readObjectVersion(
  { client, bucket, key, room }: ObjectTarget,
  id: string,
): Promise<{ bytes: Uint8Array; head: { ETag?: string; Metadata?: Record<string, string> } }> {
  const VersionId = versionIdOf(id)
  if (VersionId === null) throw versionNotFound(room, id)
  try {
    const output = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId }))
    if (!output.Body) throw new Error(`S3 returned no body for s3://${bucket}/${key}`)
    const bytes = await output.Body.transformToByteArray()
    return {
      bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      head: {
        ...(output.ETag ? { ETag: output.ETag } : {}),
        ...(output.Metadata ? { Metadata: output.Metadata } : {}),
      },
    }
  } catch (error) {
    // NoSuchVersion (404), or 400 for a VersionId S3 cannot parse; a missing bucket still fails.
    if ((status(error) === 404 || status(error) === 400) && (error as Error).name !== 'NoSuchBucket') {
      throw versionNotFound(room, id)
    }
    throw new Error(`S3 bucket ${bucket}: could not read version ${id} of ${key}`, { cause: error })
  }
}

function idOf(versionId: string): string {
  return Buffer.from(versionId, 'utf8').toString('base64url')
}

/** S3's VersionId for one of our ids, or null if `id` is none. */
function versionIdOf(id: string): string | null {
  if (!VERSION_ID_PATTERN.test(id)) return null
  const versionId = Buffer.from(id, 'base64url').toString('utf8')
  return versionId !== '' && idOf(versionId) === id ? versionId : null
}

function status(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
}

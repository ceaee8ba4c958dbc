import { snapshotsFrom } from '../config.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import { createAwsClients } from './aws-clients.js'
import { FileSnapshotStore } from './file-snapshot-store.js'
import { S3SnapshotStore } from './s3-snapshot-store.js'

/** The `SNAPSHOTS` variable's rule, so other processes accept exactly what the servers do. */
export { SNAPSHOTS_URL } from '../config.js'

/**
 * The snapshot store a `SNAPSHOTS` URL names (`file://…` or `s3://bucket/prefix`), for other
 * processes that read what the sync servers saved: the dashboard shows rooms no server holds.
 */
export function openSnapshotStore(
  url: string,
  aws: { region: string; endpoint?: string | undefined },
): SnapshotStore {
  const config = snapshotsFrom(url)
  if (config.kind === 'file') return new FileSnapshotStore(config.folder)
  const { s3 } = createAwsClients({ region: aws.region, endpoint: aws.endpoint })
  return new S3SnapshotStore({ bucket: config.bucket, prefix: config.prefix, client: s3 })
}

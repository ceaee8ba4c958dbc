import type { SnapshotsConfig } from '../backends.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import { createS3Client } from './aws-clients.js'
import { FileSnapshotStore } from './file-snapshot-store.js'
import { MemorySnapshotStore } from './memory-snapshot-store.js'
import { S3SnapshotStore } from './s3-snapshot-store.js'

/** The `SNAPSHOTS` rule and reading, so other processes (the dashboard) accept exactly what the servers do. */
export { SNAPSHOTS_URL, snapshotsFrom } from '../config.js'

/**
 * The `SnapshotStore` adapter `SNAPSHOTS` names: the servers' own, and other processes' that read
 * what the servers saved (the dashboard shows rooms no server holds).
 */
export function openSnapshotStore(config: SnapshotsConfig): SnapshotStore {
  switch (config.kind) {
    case 'memory':
      return new MemorySnapshotStore()
    case 'file':
      return new FileSnapshotStore(
        config.folder,
        config.versions === undefined ? {} : { versions: config.versions },
      )
    case 's3':
      return new S3SnapshotStore({
        bucket: config.bucket,
        prefix: config.prefix,
        client: createS3Client(config.aws),
      })
  }
}

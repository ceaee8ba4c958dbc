import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib'
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { Construct } from 'constructs'

export interface StorageProps {
  /** `DESTROY`: the buckets are emptied and deleted with the stack; anything else keeps them. */
  removalPolicy: RemovalPolicy | undefined
}

/** Where the sync servers keep rooms (S3 snapshots) and find each other (the DynamoDB registry). */
export class Storage extends Construct {
  /** Every `<prefix><room>.ybin` the servers write. */
  public readonly snapshotsBucket: s3.Bucket
  /** Key prefix of the snapshots, as in `SNAPSHOTS=s3://<bucket>/<prefix>`. */
  public readonly snapshotsPrefix = 'rooms/'
  /** `SNAPSHOTS` for the services that read or write them. */
  public readonly snapshotsUrl: string
  /** Access logs of the snapshots bucket and the load balancer, and VPC flow logs. */
  public readonly logsBucket: s3.Bucket
  /** Which servers hold which room: leases the servers renew, expired by TTL on `expiresAt`. */
  public readonly registryTable: dynamodb.TableV2

  constructor(scope: Construct, id: string, props: StorageProps) {
    super(scope, id)
    // S3 has no snapshot: SNAPSHOT keeps the buckets as they are.
    const removal =
      props.removalPolicy === RemovalPolicy.DESTROY
        ? { removalPolicy: RemovalPolicy.DESTROY, autoDeleteObjects: true }
        : { removalPolicy: RemovalPolicy.RETAIN }
    const locked = {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    }

    this.logsBucket = new s3.Bucket(this, 'Logs', {
      ...locked,
      ...removal,
      lifecycleRules: [
        { expiration: Duration.days(90), abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    })
    Validations.of(this.logsBucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the access-log bucket; logging its own access would log the logging.',
    })

    this.snapshotsBucket = new s3.Bucket(this, 'Snapshots', {
      ...locked,
      ...removal,
      // A bad write (or a bug) never destroys a room: the previous versions stay for 30 days,
      // and no longer, so what users deleted is erased from every version within that time.
      versioned: true,
      serverAccessLogsBucket: this.logsBucket,
      serverAccessLogsPrefix: 'snapshots-bucket/',
      lifecycleRules: [
        {
          noncurrentVersionExpiration: Duration.days(30),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
      ],
    })

    this.snapshotsUrl = `s3://${this.snapshotsBucket.bucketName}/${this.snapshotsPrefix}`

    this.registryTable = new dynamodb.TableV2(this, 'Registry', {
      partitionKey: { name: 'room', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'serverId', type: dynamodb.AttributeType.STRING },
      billing: dynamodb.Billing.onDemand(),
      timeToLiveAttribute: 'expiresAt',
      encryption: dynamodb.TableEncryptionV2.awsManagedKey(),
      // Leases only, renewed every few seconds by live servers: nothing here outlives a server.
      removalPolicy: RemovalPolicy.DESTROY,
    })
    Validations.of(this.registryTable).acknowledge({
      id: 'AwsSolutions-DDB3',
      reason:
        'The registry holds only leases that live servers renew every few seconds; a restored copy ' +
        'would be stale by the time it was restored, so point-in-time recovery buys nothing.',
    })
  }
}

import { Stack, Validations } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import type * as s3 from 'aws-cdk-lib/aws-s3'
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager'
import type { Construct } from 'constructs'
import type { Storage } from './storage.js'

/**
 * A random token in Secrets Manager: letters and digits only, so it travels anywhere. `name`: a
 * fixed name, for a secret the operator fetches by the name in the stack outputs.
 */
export function generatedSecret(
  scope: Construct,
  id: string,
  description: string,
  length: number,
  name?: string,
) {
  const secret = new secretsmanager.Secret(scope, id, {
    description,
    ...(name ? { secretName: name } : {}),
    generateSecretString: { passwordLength: length, excludePunctuation: true },
  })
  Validations.of(secret).acknowledge({
    id: 'AwsSolutions-SMG4',
    reason:
      'Read by the tasks at start; rotating it means a rolling deploy of every task that shares it, ' +
      'which docs/operations.md describes. An automatic rotation would split the fleet between two values.',
  })
  return secret
}

/**
 * Object access under the snapshots prefix only, plus listing that prefix: without s3:ListBucket,
 * S3 answers a missing room's snapshot with 403 instead of 404. Reading and listing object
 * versions (`s3:GetObjectVersion`, `s3:ListBucketVersions`) is a room's version history.
 */
export function grantSnapshots(role: iam.IRole, storage: Storage, objectActions: string[]): void {
  const bucket = storage.snapshotsBucket
  const bucketId = Stack.of(bucket).getLogicalId(bucket.node.defaultChild as s3.CfnBucket)
  Validations.of(role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${storage.snapshotsPrefix}*]`,
    reason:
      'Rooms are created at run time, one object each: the grant is the snapshots prefix, nothing wider.',
  })
  role.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: [...objectActions, 's3:GetObjectVersion'],
      resources: [bucket.arnForObjects(`${storage.snapshotsPrefix}*`)],
    }),
  )
  role.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['s3:ListBucket', 's3:ListBucketVersions'],
      resources: [bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': [`${storage.snapshotsPrefix}*`] } },
    }),
  )
}

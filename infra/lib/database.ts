import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as rds from 'aws-cdk-lib/aws-rds'
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager'
import { Construct } from 'constructs'

export interface DatabaseProps {
  vpc: ec2.IVpc
  subnets: ec2.SubnetSelection
  instanceType: string
  multiAz: boolean
  storageGiB: number
  /** The Postgres 16 minor version, such as `16.13` (`POSTGRES_VERSION` in sizes.ts by default). */
  engineVersion: string
  /** Unset: a final snapshot on deletion. Anything but `DESTROY` turns deletion protection on. */
  removalPolicy: RemovalPolicy | undefined
}

const DATABASE_NAME = 'symphony'
const USER = 'symphony'
/** Where the images keep RDS's certificate authorities (see infra/Dockerfile). */
const RDS_CA_FILE = '/app/certs/aws-rds-ca.pem'

/** RDS Postgres for metadata (rooms, connections, sizes): private, encrypted, password in Secrets Manager. */
export class Database extends Construct {
  public readonly instance: rds.DatabaseInstance
  /** The storage allocated at creation, in GiB (it grows up to 4× by itself). */
  public readonly storageGiB: number
  /** `DATABASE_URL` without the password, which goes separately as `DATABASE_PASSWORD`. */
  public readonly url: string
  /** JSON with `username`, `password`, `host`…; the services read its `password` field. */
  public readonly secret: secretsmanager.ISecret

  constructor(scope: Construct, id: string, props: DatabaseProps) {
    super(scope, id)
    this.storageGiB = props.storageGiB
    const destroy = props.removalPolicy === RemovalPolicy.DESTROY
    this.instance = new rds.DatabaseInstance(this, 'Postgres', {
      engine: rds.DatabaseInstanceEngine.postgres({
        version: rds.PostgresEngineVersion.of(props.engineVersion, '16'),
      }),
      instanceType: new ec2.InstanceType(props.instanceType),
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      publiclyAccessible: false,
      databaseName: DATABASE_NAME,
      // Characters a URL or a shell would trip over are left out of the generated password.
      credentials: rds.Credentials.fromGeneratedSecret(USER, {
        excludeCharacters: ' %+~`#$&*()|[]{}:;<>?!\'/@"\\',
      }),
      multiAz: props.multiAz,
      allocatedStorage: props.storageGiB,
      maxAllocatedStorage: props.storageGiB * 4,
      storageType: rds.StorageType.GP3,
      storageEncrypted: true,
      backupRetention: Duration.days(7),
      deletionProtection: !destroy,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.SNAPSHOT,
      port: 5432,
      caCertificate: rds.CaCertificate.RDS_CA_RSA2048_G1,
      cloudwatchLogsExports: ['postgresql'],
      autoMinorVersionUpgrade: true,
    })
    if (!this.instance.secret) throw new Error('RDS created no secret for the generated credentials')
    this.secret = this.instance.secret
    const host = this.instance.dbInstanceEndpointAddress
    const port = this.instance.dbInstanceEndpointPort
    // verify-full: the services check the server's certificate against RDS's authorities.
    this.url = `postgres://${USER}@${host}:${port}/${DATABASE_NAME}?sslmode=verify-full&sslrootcert=${RDS_CA_FILE}`

    const acknowledge = (ruleId: string, reason: string) =>
      Validations.of(this.instance).acknowledge({ id: ruleId, reason })
    acknowledge(
      'AwsSolutions-RDS11',
      'Port 5432 is reachable only from the two services’ security groups, inside isolated subnets; ' +
        'a non-standard port would add nothing there and surprise operators’ tools.',
    )
    acknowledge(
      'AwsSolutions-SMG4',
      'The services read the password once at start; a rotation would cut them off until their next ' +
        'deploy. docs/operations.md explains rotating it together with a rolling deploy.',
    )
    if (!props.multiAz) {
      acknowledge(
        'AwsSolutions-RDS3',
        'The small size runs a single-AZ instance to stay cheap to try (metadata only: sync never ' +
          'waits on it); medium and large, or dbMultiAz=true, run Multi-AZ.',
      )
    }
    if (destroy) {
      acknowledge(
        'AwsSolutions-RDS10',
        'removalPolicy DESTROY (retainData=false) was asked for: a throwaway stack whose database cdk destroy must be able to delete.',
      )
    }
  }

  /** Lets `peer` connect to Postgres. */
  allowFrom(peer: ec2.IConnectable, description: string): void {
    this.instance.connections.allowDefaultPortFrom(peer, description)
  }
}

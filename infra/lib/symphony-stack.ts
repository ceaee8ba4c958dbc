import { RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib'
import * as acm from 'aws-cdk-lib/aws-certificatemanager'
import type { Construct } from 'constructs'
import type { SymphonySettings } from './settings.js'
import { Symphony } from './symphony.js'
import type { SymphonyProps } from './symphony-props.js'

export interface SymphonyStackProps extends StackProps {
  settings: SymphonySettings
}

/**
 * The bundled app's stack: the `Symphony` construct and nothing else, so `cdk deploy` stands it up
 * and `cdk destroy` takes it down. The construct's id is `Default`, which CDK leaves out of logical
 * ids: the resources keep the ids they had when the stack built them itself.
 */
export class SymphonyStack extends Stack {
  public readonly symphony: Symphony

  constructor(scope: Construct, id: string, props: SymphonyStackProps) {
    super(scope, id, props)
    this.symphony = new Symphony(this, 'Default', symphonyPropsOf(this, props.settings))
  }
}

/** The context's settings as the construct's typed props. */
export function symphonyPropsOf(scope: Construct, settings: SymphonySettings): SymphonyProps {
  return {
    size: settings.size,
    sync: settings.sync,
    dashboard: settings.dashboard,
    redis: settings.redis,
    journal: settings.journal,
    database: settings.database,
    natGateways: settings.natGateways,
    certificate: settings.certificateArn
      ? acm.Certificate.fromCertificateArn(scope, 'Certificate', settings.certificateArn)
      : undefined,
    domainName: settings.domainName,
    alarmEmail: settings.alarmEmail,
    // retainData (the default) keeps each part's own default: buckets kept, a final database snapshot.
    removalPolicy: settings.retainData ? undefined : RemovalPolicy.DESTROY,
    authJwksUrl: settings.authJwksUrl,
    webhookUrl: settings.webhookUrl,
    serverSettings: settings.serverSettings,
    allowedOrigins: settings.allowedOrigins,
    loadAgents: settings.loadAgents,
    shutdownTimeoutSeconds: settings.shutdownTimeoutSeconds,
    cpuArchitecture: settings.cpuArchitecture,
    commit: settings.commit,
    name: settings.stackName,
  }
}

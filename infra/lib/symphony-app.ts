import { App, type AppProps, Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import { parseSettings, type SymphonySettings } from './settings.js'
import { SymphonyStack } from './symphony-stack.js'

export interface SymphonyAppOptions extends AppProps {
  /** The CLI's account and region (CDK_DEFAULT_ACCOUNT, CDK_DEFAULT_REGION), when it has them. */
  defaultAccount?: string | undefined
  defaultRegion?: string | undefined
  /** The checkout's commit (git's HEAD), for the servers' build info when the context names none. */
  defaultCommit?: string | undefined
}

/**
 * The app: settings from context, the stack, and cdk-nag's AWS Solutions checks, which fail
 * synthesis on any finding that is not acknowledged, with its reason, next to the resource.
 */
export function createSymphonyApp(options: SymphonyAppOptions = {}): {
  app: App
  stack: SymphonyStack
  settings: SymphonySettings
} {
  const { defaultAccount, defaultRegion, defaultCommit, ...appProps } = options
  const app = new App(appProps)
  const settings = parseSettings((key) => app.node.tryGetContext(key), {
    region: defaultRegion,
    commit: defaultCommit,
  })
  const stack = new SymphonyStack(app, settings.stackName, {
    settings,
    env: { account: defaultAccount, region: settings.region },
    description: `Symphony real-time collaboration backend (${settings.size})`,
  })
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app))
  return { app, stack, settings }
}

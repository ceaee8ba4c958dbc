#!/usr/bin/env node
// The CDK app that `npx cdk synth|deploy|destroy` runs (the root cdk.json points here).
import { createSymphonyApp } from '../lib/symphony-app.js'

try {
  createSymphonyApp({
    defaultAccount: process.env.CDK_DEFAULT_ACCOUNT,
    defaultRegion: process.env.CDK_DEFAULT_REGION,
  })
} catch (error) {
  // One line naming the context key, not a stack trace.
  console.error(`symphony infra: ${(error as Error).message}`)
  process.exit(1)
}

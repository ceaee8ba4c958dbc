#!/usr/bin/env node
// The CDK app that `npx cdk synth|deploy|destroy` runs (the root cdk.json points here).
import { execFileSync } from 'node:child_process'
import { createSymphonyApp } from '../lib/symphony-app.js'

/** The checkout's commit, for the servers' `symphony_build_info`; none outside a git checkout. */
function gitCommit(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      encoding: 'utf8',
      stdio: 'pipe',
    }).trim()
  } catch {
    return undefined
  }
}

try {
  createSymphonyApp({
    defaultAccount: process.env.CDK_DEFAULT_ACCOUNT,
    defaultRegion: process.env.CDK_DEFAULT_REGION,
    defaultCommit: gitCommit(),
  })
} catch (error) {
  // One line naming the context key, not a stack trace.
  console.error(`symphony infra: ${(error as Error).message}`)
  process.exit(1)
}

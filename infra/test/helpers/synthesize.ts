import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Template } from 'aws-cdk-lib/assertions'
import { createSymphonyApp } from '../../lib/symphony-app.js'
import type { SymphonyStack } from '../../lib/symphony-stack.js'

/** The context `npx cdk` passes from the root cdk.json: feature flags pinned at creation. */
export const CDK_JSON_CONTEXT: Record<string, unknown> = JSON.parse(
  readFileSync(new URL('../../../cdk.json', import.meta.url), 'utf8'),
).context

const outdirs: string[] = []

/**
 * Synthesizes the app as `npx cdk synth` would, with `context` on top of cdk.json's, into a
 * temporary folder, after `amend` changed the stack. Throws what synthesis throws, cdk-nag findings
 * included. One difference: the image assets' sources are not copied into the folder (CDK's
 * `aws:cdk:disable-asset-staging`, as SAM uses), so the asset manifest points at the repository
 * itself; that halves each synthesis. `cdk-cli.test.ts` runs the real `npx cdk synth`, staging and all.
 */
export function synthesize(context: Record<string, unknown> = {}, amend?: (stack: SymphonyStack) => void) {
  const outdir = mkdtempSync(join(tmpdir(), 'symphony-cdk-'))
  outdirs.push(outdir)
  const built = createSymphonyApp({
    outdir,
    context: { ...CDK_JSON_CONTEXT, 'aws:cdk:disable-asset-staging': true, ...context },
  })
  amend?.(built.stack)
  const assembly = built.app.synth()
  return { ...built, assembly, template: Template.fromStack(built.stack) }
}

/** Deletes every folder `synthesize` made. */
export function removeSynthesized(): void {
  for (const outdir of outdirs.splice(0)) rmSync(outdir, { recursive: true, force: true })
}

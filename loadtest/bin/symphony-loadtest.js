#!/usr/bin/env node
// The CLI is compiled TypeScript: say how to build it rather than fail with a missing module.
import { existsSync } from 'node:fs'

const cli = new URL('../dist/cli.js', import.meta.url)
if (!existsSync(cli)) {
  console.error('symphony-loadtest is not built yet: run `npm run build` at the repository root first')
  process.exit(1)
}
await import(cli.href)

import assert from 'node:assert/strict'
import { it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'

/**
 * What an app pays for the client on top of `yjs` (a peer dependency it has anyway). 13 KiB since
 * issue #35 (12 before): the awareness sent as its own presence only, auth refusals that stop, and
 * a deleted room cleared took it to 12.1.
 */
const BUDGET_BYTES = 13 * 1024

it(`bundles to at most ${BUDGET_BYTES / 1024} KiB minified and gzipped, without yjs`, async () => {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('../dist/index.js', import.meta.url))],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    external: ['yjs'],
    write: false,
    logLevel: 'silent',
  })
  const code = result.outputFiles[0]?.contents ?? new Uint8Array()
  const gzipped = gzipSync(code, { level: 9 }).length
  console.log(`@symphony/client: ${code.length} bytes minified, ${gzipped} bytes gzipped`)
  assert.ok(code.length > 5_000, 'the bundle holds the client')
  assert.ok(gzipped <= BUDGET_BYTES, `${gzipped} bytes gzipped, over the ${BUDGET_BYTES}-byte budget`)
})

import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const BIOME = join(ROOT, 'node_modules/.bin/biome')

/** Lints `files` (path → source) laid out in a scratch tree under the repository's own rules. */
async function lintPlanted(files: Record<string, string>): Promise<string[]> {
  const folder = mkdtempSync(join(tmpdir(), 'symphony-lint-'))
  scratch.push(folder)
  const config = JSON.parse(readFileSync(join(ROOT, 'biome.json'), 'utf8'))
  config.vcs.enabled = false // the scratch tree is no git checkout
  writeFileSync(join(folder, 'biome.json'), JSON.stringify(config))
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(folder, path)), { recursive: true })
    writeFileSync(join(folder, path), source)
  }
  const output = await promisify(execFile)(BIOME, ['lint', '--reporter=json', '.'], { cwd: folder }).then(
    (done) => done.stdout,
    (failed: { stdout: string }) => failed.stdout,
  )
  const report = JSON.parse(output) as { diagnostics: { category: string; location: { path: string } }[] }
  return report.diagnostics.map((d) => `${d.category} ${d.location.path}`).sort()
}

const scratch: string[] = []
after(() => {
  for (const folder of scratch) rmSync(folder, { recursive: true, force: true })
})

const USES_WS = "import WebSocket from 'ws'\n\nexport const socket = WebSocket\n"

describe('the lint rules that keep the architecture', () => {
  it('refuse network and cloud libraries, adapters and transports in the core and its protocol, and only there', async () => {
    const found = await lintPlanted({
      'server/src/core/uses-ws.ts': USES_WS,
      'server/src/core/uses-s3.ts':
        "import { S3Client } from '@aws-sdk/client-s3'\n\nexport const s3 = S3Client\n",
      'server/src/core/uses-adapter.ts': "import { x } from '../adapters/redis.js'\n\nexport const y = x\n",
      'server/src/protocol/uses-redis.ts': "import { Redis } from 'ioredis'\n\nexport const redis = Redis\n",
      'server/src/transport/uses-ws.ts': USES_WS,
    })
    assert.deepEqual(found, [
      'lint/style/noRestrictedImports server/src/core/uses-adapter.ts',
      'lint/style/noRestrictedImports server/src/core/uses-s3.ts',
      'lint/style/noRestrictedImports server/src/core/uses-ws.ts',
      'lint/style/noRestrictedImports server/src/protocol/uses-redis.ts',
    ])
  })

  it('refuse the Prometheus metrics and the observers in the core: it counts through CoreMetrics and emits events', async () => {
    const found = await lintPlanted({
      'server/src/core/uses-metrics.ts':
        "import type { ServerMetrics } from '../metrics.js'\n\nexport type M = ServerMetrics\n",
      'server/src/core/uses-observer.ts':
        "import { observeMetrics } from '../observers/metrics-observer.js'\n\nexport const o = observeMetrics\n",
      'server/src/core/uses-prom.ts': "import { Counter } from 'prom-client'\n\nexport const c = Counter\n",
      'server/src/observers/uses-metrics.ts':
        "import type { ServerMetrics } from '../metrics.js'\n\nexport type M = ServerMetrics\n",
    })
    assert.deepEqual(found, [
      'lint/style/noRestrictedImports server/src/core/uses-metrics.ts',
      'lint/style/noRestrictedImports server/src/core/uses-observer.ts',
      'lint/style/noRestrictedImports server/src/core/uses-prom.ts',
    ])
  })

  it('refuse an import cycle, also one made only of type imports', async () => {
    const found = await lintPlanted({
      'loadtest/src/a.ts': "import type { B } from './b.js'\n\nexport type A = { b: B }\n",
      'loadtest/src/b.ts': "import type { A } from './a.js'\n\nexport type B = { a: A }\n",
    })
    assert.deepEqual(found, [
      'lint/suspicious/noImportCycles loadtest/src/a.ts',
      'lint/suspicious/noImportCycles loadtest/src/b.ts',
    ])
  })
})

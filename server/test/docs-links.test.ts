import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { anchorsOf, brokenLinks, linksOf, slugOf } from './helpers/markdown-links.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The README, the two reference pages at the root, and every guide in docs/. */
const PAGES = [
  'README.md',
  'SECURITY.md',
  'BENCHMARKS.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]

describe('links in the documentation', () => {
  for (const page of PAGES) {
    it(`${page}: every relative link and #anchor resolves`, () => {
      assert.deepEqual(brokenLinks(ROOT, page), [])
    })
  }

  it('the README links every guide in docs/', () => {
    const targets = new Set(linksOf(readFileSync(join(ROOT, 'README.md'), 'utf8')).map((link) => link.target))
    for (const page of PAGES.filter((p) => p.startsWith('docs/'))) {
      assert.ok(targets.has(page), `the README links ${page}`)
    }
  })
})

describe('the link checker itself', () => {
  const folder = mkdtempSync(join(tmpdir(), 'symphony-links-'))
  after(() => rmSync(folder, { recursive: true, force: true }))

  it('makes anchors as GitHub does', () => {
    assert.equal(
      slugOf('`npm run cluster`: a real cluster on your machine'),
      'npm-run-cluster-a-real-cluster-on-your-machine',
    )
    assert.equal(
      slugOf('Packages for apps: `@symphony/client`, `@symphony/react`'),
      'packages-for-apps-symphonyclient-symphonyreact',
    )
    assert.equal(
      slugOf('Erasure: what a deletion removes, and when'),
      'erasure-what-a-deletion-removes-and-when',
    )
    assert.equal(slugOf('Soak: does memory leak?'), 'soak-does-memory-leak')
    assert.equal(slugOf('A [linked](x.md) café'), 'a-linked-café')
    assert.deepEqual(
      [...anchorsOf('# Notes\n## Notes\n```\n# not a heading\n```\n## Notes')],
      ['notes', 'notes-1', 'notes-2'],
    )
  })

  it('finds links outside code only, with their lines', () => {
    const page = [
      'See [a](a.md) and `[not](code.md)`.',
      '```',
      '[not](fenced.md)',
      '```',
      '![image](img.png) <https://example.com> [ext](https://example.com/x)',
      '',
      '[ref]: ref.md',
    ].join('\n')
    assert.deepEqual(linksOf(page), [
      { target: 'a.md', line: 1 },
      { target: 'img.png', line: 5 },
      { target: 'https://example.com/x', line: 5 },
      { target: 'ref.md', line: 7 },
    ])
  })

  it('reports missing files, missing anchors, absolute paths and links out of the repository', () => {
    mkdirSync(join(folder, 'docs'))
    writeFileSync(join(folder, 'docs', 'guide.md'), '# Guide\n\n## Some part\n')
    writeFileSync(
      join(folder, 'README.md'),
      [
        '# Top',
        '[fine](docs/guide.md#some-part) [fine](#top) [fine](docs/) [ext](https://example.com/#nothing)',
        '[gone](docs/missing.md)',
        '[no heading](docs/guide.md#other-part)',
        '[no heading here](#bottom)',
        '[absolute](/docs/guide.md)',
        '[outside](../elsewhere.md)',
      ].join('\n'),
    )
    assert.deepEqual(brokenLinks(folder, 'README.md'), [
      'README.md:3: docs/missing.md: no such file',
      'README.md:4: docs/guide.md#other-part: no heading makes #other-part',
      'README.md:5: #bottom: no heading makes #bottom',
      'README.md:6: /docs/guide.md: links inside the repository are relative',
      'README.md:7: ../elsewhere.md: outside the repository',
    ])
  })
})

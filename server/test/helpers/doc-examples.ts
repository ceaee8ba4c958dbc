// The code blocks of the documentation that a reader copies, found by the marker on their fence:
// ```js example=<example>/<file> [run=backend|browser|node] [webhook=<path>]
// Blocks naming one file are that file, in order (one page only); the files of one example form one
// small app, whichever pages they are on. docs/development.md ("Code blocks that run") is the
// convention in full; run-doc-example.ts runs what this module finds.
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

export type RunAs = 'backend' | 'browser' | 'node'

export interface DocFile {
  /** The file's path inside its example, e.g. `backend.mjs`. */
  path: string
  /** The fence's language: js, ts, tsx… */
  lang: string
  /** How the example runs it; unset: type-checked only. */
  run?: RunAs
  /** For a backend: the path the test's server sends its webhooks to. */
  webhook?: string
  code: string
  /** `page:line` of each block the file is made of. */
  sources: string[]
}

export interface DocExample {
  name: string
  files: DocFile[]
}

export interface Page {
  /** The page's path from the repository's root, e.g. `docs/deploy.md`. */
  page: string
  text: string
}

/** Fence languages that must be marked: either a file of an example, or `fragment`. */
export const CODE_LANGUAGES = new Set([
  'js',
  'mjs',
  'cjs',
  'jsx',
  'ts',
  'mts',
  'tsx',
  'javascript',
  'typescript',
])
const FILE_EXTENSION = /\.(js|mjs|cjs|jsx|ts|mts|tsx)$/
const RUN_AS = new Set<string>(['backend', 'browser', 'node'])
const EXAMPLE = /^([a-z0-9][a-z0-9-]*)\/((?:[\w-]+\/)*[\w.-]+)$/

interface Block {
  page: string
  line: number
  lang: string
  attributes: Map<string, string>
  words: string[]
  code: string
}

/** Every fenced block of a page, with its info string split into a language, `key=value` pairs and words. */
export function fencedBlocks({ page, text }: Page): Block[] {
  const lines = text.split('\n')
  const blocks: Block[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^( {0,3})(`{3,})([^`]*)$/.exec(lines[i] ?? '')
    if (!open) continue
    const [, indent = '', fence = '', info = ''] = open
    const body: string[] = []
    let j = i + 1
    for (; j < lines.length; j++) {
      const line = lines[j] ?? ''
      if (new RegExp(`^ {0,3}${fence}\`*\\s*$`).test(line)) break
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart())
    }
    const [lang = '', ...rest] = info.trim().split(/\s+/).filter(Boolean)
    const attributes = new Map<string, string>()
    const words: string[] = []
    for (const token of rest) {
      const eq = token.indexOf('=')
      if (eq > 0) attributes.set(token.slice(0, eq), token.slice(eq + 1))
      else words.push(token)
    }
    blocks.push({ page, line: i + 1, lang, attributes, words, code: `${body.join('\n')}\n` })
    i = j
  }
  return blocks
}

/**
 * The examples the pages mark, and what is wrong with the marking (each problem names its page
 * and line). A JavaScript or TypeScript block with neither `example=` nor the word `fragment` is
 * a problem too: every block a reader might copy is either checked or said not to be a whole file.
 */
export function docExamples(pages: Page[]): { examples: DocExample[]; problems: string[] } {
  const problems: string[] = []
  const files = new Map<string, DocFile & { example: string; page: string }>()
  for (const page of pages) {
    for (const block of fencedBlocks(page)) {
      const where = `${block.page}:${block.line}`
      const marker = block.attributes.get('example')
      if (marker === undefined) {
        if (CODE_LANGUAGES.has(block.lang) && !block.words.includes('fragment')) {
          problems.push(`${where}: a ${block.lang} block with neither example=<example>/<file> nor fragment`)
        }
        if (block.attributes.size > 0) problems.push(`${where}: attributes without example=`)
        continue
      }
      const named = EXAMPLE.exec(marker)
      if (!named || !FILE_EXTENSION.test(marker)) {
        problems.push(`${where}: example=${marker} is not <example>/<file> with a .js/.mjs/.ts/.tsx… file`)
        continue
      }
      for (const key of block.attributes.keys()) {
        if (!['example', 'run', 'webhook'].includes(key)) problems.push(`${where}: unknown attribute ${key}=`)
      }
      if (block.words.length > 0) problems.push(`${where}: unknown words ${block.words.join(' ')}`)
      const run = block.attributes.get('run')
      if (run !== undefined && !RUN_AS.has(run))
        problems.push(`${where}: run=${run} is not backend, browser or node`)
      const webhook = block.attributes.get('webhook')
      if (webhook !== undefined && (run !== 'backend' || !webhook.startsWith('/'))) {
        problems.push(`${where}: webhook=<path starting with /> goes with run=backend`)
      }
      const [, example = '', path = ''] = named
      const known = files.get(marker)
      if (!known) {
        files.set(marker, {
          example,
          page: block.page,
          path,
          lang: block.lang,
          ...(run ? { run: run as RunAs } : {}),
          ...(webhook ? { webhook } : {}),
          code: block.code,
          sources: [where],
        })
        continue
      }
      if (known.page !== block.page) {
        problems.push(
          `${where}: ${marker} is already on ${known.sources[0]}: a file's blocks are on one page`,
        )
        continue
      }
      if ((run && run !== known.run) || (webhook && webhook !== known.webhook)) {
        problems.push(`${where}: ${marker} says run=/webhook= differently from ${known.sources[0]}`)
      }
      known.code += block.code
      known.sources.push(where)
    }
  }
  const examples = new Map<string, DocExample>()
  for (const { example, page: _page, ...file } of files.values()) {
    const entry = examples.get(example) ?? { name: example, files: [] }
    entry.files.push(file)
    examples.set(example, entry)
  }
  for (const example of examples.values()) {
    const backends = example.files.filter((file) => file.run === 'backend')
    if (backends.length > 1) {
      problems.push(
        `example ${example.name} has ${backends.length} backends (${backends.map((f) => f.path).join(', ')}): one at most`,
      )
    }
  }
  return { examples: [...examples.values()], problems }
}

const SKIPPED_FOLDERS = new Set([
  'node_modules',
  'dist',
  '.services',
  '.test-artifacts',
  'cdk.out',
  'data',
  '.git',
])

/** Every Markdown page of the repository (not its dependencies or build output). */
export function repositoryPages(root: string): Page[] {
  const pages: Page[] = []
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name)
      if (entry.isDirectory()) {
        if (!SKIPPED_FOLDERS.has(entry.name)) walk(path)
      } else if (entry.name.endsWith('.md')) {
        pages.push({ page: relative(root, path).split('\\').join('/'), text: readFileSync(path, 'utf8') })
      }
    }
  }
  walk(root)
  return pages.sort((a, b) => a.page.localeCompare(b.page))
}

/** One file of one example, as the pages give it (for tests that run a single block their own way). */
export function docFile(root: string, marker: string): DocFile {
  const [name, ...rest] = marker.split('/')
  const path = rest.join('/')
  const { examples } = docExamples(repositoryPages(root))
  const file = examples.find((example) => example.name === name)?.files.find((f) => f.path === path)
  if (!file) throw new Error(`no block of the documentation is marked example=${marker}`)
  return file
}

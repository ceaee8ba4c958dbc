// Writes the documentation's examples (doc-examples.ts finds them) into an app that installed the
// packed packages, and type-checks them there as a reader's editor and build would.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { isBuiltin } from 'node:module'
import { dirname, join } from 'node:path'
import type { DocExample, DocFile } from '@symphony/test-helpers/doc-examples'
import { repositoryVersion, TSC } from './scratch-app.js'

/** The packages that come from the tarballs, never the registry (the server: for examples embedding it). */
const PACKED = new Set(['@symphony/client', '@symphony/react', '@symphony/node', '@symphony/server'])

/** Whether an example imports the sync server itself (`createSyncServer`): its app installs it packed. */
export function embedsServer(examples: DocExample[]): boolean {
  return examples.some((example) =>
    example.files.some((file) => /['"]@symphony\/server['"/]/.test(file.code)),
  )
}

/** The packages the examples import (and their types), at the versions the repository has. */
export function exampleDependencies(examples: DocExample[]): string[] {
  const names = new Set(['yjs', '@types/node'])
  const specifier = /\bfrom\s+['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]/g
  for (const file of examples.flatMap((example) => example.files)) {
    for (const match of file.code.matchAll(specifier)) {
      const spec = match[1] ?? match[2] ?? ''
      if (spec.startsWith('.') || spec.startsWith('/') || isBuiltin(spec)) continue
      const parts = spec.split('/')
      const name = spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec)
      if (!PACKED.has(name)) names.add(name)
    }
  }
  for (const name of [...names]) {
    const types = `@types/${name.replace(/^@([^/]+)\//, '$1__')}`
    if (repositoryVersion(types) !== types) names.add(types)
  }
  return [...names].sort().map(repositoryVersion)
}

/** What an app's own setup declares and the blocks take for granted. */
const APP_DECLARATIONS = `// The signed-in user, as a sign-in middleware (Passport, a session) sets it.
declare global {
  namespace Express {
    interface Request {
      user?: { id: string; name: string }
    }
  }
}
export {}
`

/** Where an example's file sits in the app. */
export function fileIn(app: string, example: DocExample, file: DocFile): string {
  return join(app, 'examples', example.name, ...file.path.split('/'))
}

/** The page and line a line of an example's file came from, when the file is one block. */
function sourceOf(file: DocFile, line: number): string {
  const at = /^(.*):(\d+)$/.exec(file.sources[0] ?? '')
  if (file.sources.length > 1 || !at) return file.sources.join(', ')
  return `${at[1]}:${Number(at[2]) + line}`
}

/**
 * Writes every example's files into the app as the pages give them and type-checks them against
 * the installed packages: TypeScript strictly, JavaScript as an editor's checkJs would. Throws
 * with the compiler's errors, each with the page and line it points at.
 */
export function typeCheckExamples(app: string, examples: DocExample[]): void {
  mkdirSync(join(app, 'harness'), { recursive: true })
  writeFileSync(join(app, 'harness', 'app.d.ts'), APP_DECLARATIONS)
  const located = new Map<string, DocFile>()
  for (const example of examples) {
    for (const file of example.files) {
      const path = fileIn(app, example, file)
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(path, file.code)
      located.set(`examples/${example.name}/${file.path}`, file)
    }
  }
  const options = {
    noEmit: true,
    module: 'esnext',
    moduleResolution: 'bundler',
    target: 'es2022',
    lib: ['es2022', 'dom', 'dom.iterable'],
    jsx: 'react-jsx',
    types: ['node'],
    moduleDetection: 'force',
    skipLibCheck: true,
  }
  const projects = {
    'tsconfig.examples-ts.json': {
      strict: true,
      include: ['examples/**/*.ts', 'examples/**/*.mts', 'examples/**/*.tsx'],
    },
    'tsconfig.examples-js.json': {
      strict: false,
      allowJs: true,
      checkJs: true,
      include: ['examples/**/*.js', 'examples/**/*.mjs', 'examples/**/*.cjs', 'examples/**/*.jsx'],
    },
  }
  const errors: string[] = []
  for (const [name, { include, ...compilerOptions }] of Object.entries(projects)) {
    const files = [...located.keys()].filter((path) =>
      include.some((glob) => path.endsWith(glob.slice(glob.lastIndexOf('.')))),
    )
    if (files.length === 0) continue
    writeFileSync(
      join(app, name),
      JSON.stringify({
        compilerOptions: { ...options, ...compilerOptions },
        include: [...include, 'harness/*.d.ts'],
      }),
    )
    try {
      execFileSync('node', [TSC, '-p', name], { cwd: app, encoding: 'utf8', stdio: 'pipe' })
    } catch (error) {
      const output = String((error as { stdout?: string }).stdout ?? error)
      for (const line of output.split('\n').filter((l) => l.trim() !== '')) {
        const at = /^(examples\/[^(]+)\((\d+),\d+\)/.exec(line)
        const file = at ? located.get(at[1] ?? '') : undefined
        errors.push(file && at ? `${sourceOf(file, Number(at[2]))}: ${line}` : line)
      }
    }
  }
  assert.deepEqual(errors, [], `the documentation's code blocks type-check:\n${errors.join('\n')}`)
}

import { readdirSync, readFileSync } from 'node:fs'
import { extname, join } from 'node:path'

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
}

export interface StaticFile {
  body: Buffer
  contentType: string
}

/**
 * The demo's few files, read into memory once at start-up: no path from a request ever reaches
 * the file system. `/` serves `index.html`, `/react` serves `react.html`.
 */
export function loadStaticFiles(folder: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>()
  for (const name of readdirSync(folder)) {
    const contentType = CONTENT_TYPES[extname(name)]
    if (contentType) files.set(`/${name}`, { body: readFileSync(join(folder, name)), contentType })
  }
  const index = files.get('/index.html')
  if (index) files.set('/', index)
  // Pages also answer without their extension: `/react` is `react.html`.
  for (const [path, file] of [...files]) if (path.endsWith('.html')) files.set(path.slice(0, -5), file)
  return files
}

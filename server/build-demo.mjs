// Bundles the demo whiteboard (served by the server at `/`) into dist/demo. Run: node build-demo.mjs
import { copyFile, mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

// Paths relative to this script, so it works from any working directory.
const here = (path) => fileURLToPath(new URL(path, import.meta.url))

await mkdir(here('dist/demo'), { recursive: true })
await build({
  // The page, and its service worker (which must sit beside index.html to control it).
  entryPoints: [here('demo/whiteboard.ts'), here('demo/sw.ts')],
  outdir: here('dist/demo'),
  bundle: true,
  format: 'esm',
  target: 'es2022', // top-level await: the page asks how to authenticate before it connects
  minify: true,
  sourcemap: true,
  logLevel: 'warning',
})
await Promise.all(['index.html', 'style.css'].map((f) => copyFile(here(`demo/${f}`), here(`dist/demo/${f}`))))

// Bundles the demo whiteboard (served by the server at `/`) and the React example (at `/react`)
// into dist/demo. Run: node build-demo.mjs
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
// The React example at /react. @symphony/react is bundled from its source, so building the server
// (its Docker image included) does not need that package built first.
await build({
  entryPoints: [here('demo-react/app.tsx')],
  outfile: here('dist/demo/react.js'),
  bundle: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': '"production"' },
  alias: { '@symphony/react': here('../client-lib/react/src/index.ts') },
  minify: true,
  sourcemap: true,
  logLevel: 'warning',
})
await Promise.all(['index.html', 'style.css'].map((f) => copyFile(here(`demo/${f}`), here(`dist/demo/${f}`))))
await copyFile(here('demo-react/react.html'), here('dist/demo/react.html'))

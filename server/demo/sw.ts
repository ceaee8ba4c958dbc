/**
 * The demo's service worker: keeps the page's own files so a reload works offline. Network first
 * (a running server always serves the newest build), the cached copy when the network is gone.
 * The document itself lives in IndexedDB through @symphony/client, not here.
 */
const worker = self as unknown as ServiceWorkerGlobalScope

const CACHE = 'symphony-whiteboard-v1'
const SHELL = ['./', './whiteboard.js', './style.css']

worker.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL))
      .then(() => worker.skipWaiting()),
  )
})

worker.addEventListener('activate', (event) => event.waitUntil(worker.clients.claim()))

worker.addEventListener('fetch', (event) => {
  const { request } = event
  // Only the page and its files: health checks and access checks must always ask the server.
  const shellUrls = SHELL.map((path) => new URL(path, worker.location.href).href)
  const url = new URL(request.url)
  const isShell = request.mode === 'navigate' || shellUrls.includes(url.origin + url.pathname)
  if (request.method !== 'GET' || url.origin !== worker.location.origin || !isShell) return
  event.respondWith(
    fetch(request)
      .then((response) => {
        if (response.ok) {
          const copy = response.clone()
          void caches.open(CACHE).then((cache) => cache.put(request, copy))
        }
        return response
      })
      // `?room=…` pages are all the same page: match the cached one whatever the query.
      .catch(async () => (await caches.match(request, { ignoreSearch: true })) ?? Response.error()),
  )
})

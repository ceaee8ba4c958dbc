export interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
}

/** A promise and its resolve function (Node 20 has no `Promise.withResolvers`). */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((done) => {
    resolve = done
  })
  return { promise, resolve }
}

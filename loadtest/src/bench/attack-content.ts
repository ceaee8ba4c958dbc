import { setTimeout as sleep } from 'node:timers/promises'
import { readFrame, SYNC_STEP2, syncStep1, syncUpdate } from '../virtual-users/wire.js'
import { type CloseTally, keepConnected, type Running, sendingOnEachConnection } from './attack-clients.js'
import { arrayOfObjectsUpdate } from './json-values.js'

/** The attacks of `npm run bench:attack` on what content costs (issue 47's rows). */

const EMPTY_STATE_VECTOR = new Uint8Array([0])

/**
 * A writer that sends `count` small updates of one JSON value each (`[{}, …]` of `elements`
 * objects: 200 KB on the wire, 6.5 MB once built) in a row, under a client id of its own on every
 * connection, and reconnects when closed.
 */
export function jsonValueWriter(
  url: string,
  options: { count: number; elements: number },
  tally: CloseTally,
): Running {
  let client = 1_000
  return keepConnected(1, url, tally, (socket) => {
    client++
    for (let clock = 0; clock < options.count; clock++) {
      socket.send(
        syncUpdate(arrayOfObjectsUpdate({ elements: options.elements, key: `k${client}-`, client, clock })),
      )
    }
    return undefined
  })
}

/** A reader in each of `urls`' rooms, all joining at once, each coming back when closed. */
export function readersJoiningTogether(urls: string[], tally: CloseTally): Running {
  return sendingOnEachConnection(urls, syncStep1(EMPTY_STATE_VECTOR), tally)
}

/**
 * `count` readers joining `url` together (issue 47's row 10: 150 readers of a 20 MB room), each
 * reading the whole state as fast as its share of this process's core allows, then joining again
 * at once, until stopped. Closes the server makes go to `tally`; `downloads` counts whole states read.
 */
export function wholeStateReaders(
  url: string,
  count: number,
  tally: CloseTally,
): Running & { downloads(): number } {
  const request = syncStep1(EMPTY_STATE_VECTOR)
  let downloads = 0
  const running = keepConnected(
    count,
    url,
    tally,
    (socket) => {
      socket.send(request)
      return undefined
    },
    {
      message: (data, leave) => {
        const frame = readFrame(data)
        if (frame.type !== 'sync' || frame.kind !== SYNC_STEP2) return
        downloads++
        leave()
      },
    },
  )
  return { downloads: () => downloads, stop: running.stop }
}

/** HTTP statuses of the document reads, and how often. */
export type StatusTally = Map<number, number>

/**
 * `parallel` loops that each read `url` (a room's `…/document`, the REST API) as JSON, one read
 * after another, until stopped: the statuses go to `statuses`.
 */
export function documentReaders(
  url: string,
  secret: string,
  parallel: number,
  statuses: StatusTally,
): Running {
  let running = true
  const loops = Array.from({ length: parallel }, async () => {
    while (running) {
      const status = await fetch(url, { headers: { authorization: `Bearer ${secret}` } })
        .then(async (response) => {
          await response.arrayBuffer()
          return response.status
        })
        .catch(() => 0)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
      if (status !== 200) await sleep(200) // refused: as a client backing off would
    }
  })
  return {
    stop: async () => {
      running = false
      await Promise.all(loops)
    },
  }
}

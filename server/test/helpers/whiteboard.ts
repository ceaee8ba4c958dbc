import assert from 'node:assert/strict'
import { isDeepStrictEqual } from 'node:util'
import type { Browser, Page } from 'playwright-core'
import { eventually } from './clients.js'

export type ShapeKind = 'rect' | 'ellipse'

/**
 * The demo whiteboard served at `url` (a sync server's http base), in a browser profile of its
 * own (another person's laptop), synced to `room`.
 */
export async function openWhiteboard(
  browser: Browser,
  url: string,
  room: string,
  name?: string,
): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1000, height: 650 } })).newPage()
  const query = new URLSearchParams({ room, ...(name ? { name } : {}) })
  await page.goto(`${url}/?${query}`)
  await page.waitForSelector('#status[data-status="synced"]')
  return page
}

/** The page point of canvas point `at`. */
async function canvasPoint(page: Page, [x, y]: [number, number]): Promise<{ x: number; y: number }> {
  const box = await page.locator('#canvas').boundingBox()
  assert.ok(box)
  return { x: box.x + x, y: box.y + y }
}

/** Picks `kind`'s tool and clicks the canvas at `at`: one new default-sized shape. Resolves with its id. */
export async function addShape(page: Page, kind: ShapeKind, at: [number, number]): Promise<string> {
  const before = await shapeIds(page)
  await page.click(`[data-kind=${kind}]`)
  const point = await canvasPoint(page, at)
  await page.mouse.click(point.x, point.y)
  const added = await page.waitForFunction(
    ({ kind, before }) =>
      Array.from(document.querySelectorAll(`${kind}[data-shape-id]`))
        .map((el) => el.getAttribute('data-shape-id'))
        .find((id) => id !== null && !before.includes(id)),
    { kind, before },
  )
  return (await added.jsonValue()) as string
}

/** Presses at `from` and drags to `to` on the canvas: draws a shape, or moves the one under `from`. */
export async function drag(page: Page, from: [number, number], to: [number, number]): Promise<void> {
  const [start, end] = [await canvasPoint(page, from), await canvasPoint(page, to)]
  await page.mouse.move(start.x, start.y)
  await page.mouse.down()
  await page.mouse.move(end.x, end.y, { steps: 8 })
  await page.mouse.up()
}

/** The ids of the shapes `page` shows. */
export function shapeIds(page: Page): Promise<(string | null)[]> {
  return page
    .locator('[data-shape-id]')
    .evaluateAll((els) => els.map((el) => el.getAttribute('data-shape-id')))
}

/** What `page`'s board shows, one line a shape in stacking order: kind, id, geometry, colour. */
export function boardOf(page: Page): Promise<string[]> {
  return page.evaluate(describeBoard)
}

/** Waits until `page` shows exactly `board` (as `boardOf` describes it); a failure names what it showed. */
export async function waitForBoard(page: Page, board: string[], timeoutMs = 10_000): Promise<void> {
  let shown: string[] = []
  await eventually(
    async () => {
      shown = await boardOf(page)
      return isDeepStrictEqual(shown, board)
    },
    `the board shows ${JSON.stringify(board)}`,
    timeoutMs,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; it shows ${JSON.stringify(shown)}`)
  })
}

/** The room's document as the page's client holds it: what a saved version's JSON of this board is. */
export function boardDocument(page: Page): Promise<unknown> {
  return page.evaluate(() => ({
    shapes: (
      window as unknown as { symphonyDemo: { shapes: { toJSON(): unknown } } }
    ).symphonyDemo.shapes.toJSON(),
  }))
}

/** Runs in the page: one line per shape element. */
function describeBoard(): string[] {
  const attributes = ['x', 'y', 'width', 'height', 'cx', 'cy', 'rx', 'ry', 'fill']
  return Array.from(document.querySelectorAll('[data-shape-id]')).map((el) =>
    [
      el.tagName,
      el.getAttribute('data-shape-id'),
      ...attributes.map((a) => `${a}=${el.getAttribute(a)}`),
    ].join(' '),
  )
}

import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { uniqueRoom } from '@symphony/test-helpers/clients'
import { startTestServer, type TestServer } from '@symphony/test-helpers/test-server'
import { TEST_SECRET } from '@symphony/test-helpers/tokens'
import type { Page } from 'playwright-core'
import { appSuite, bundleIn, codeBlock, pinned, serveApp, swap, typeCheck } from './helpers/scratch-app.js'

const GUIDE = 'docs/editors.md'

/** The guide's sections, each with its `npm install` lines. */
const SECTIONS = ['## Tiptap', '## CodeMirror 6', '## Monaco', '## Lexical']

/**
 * What the guide's `npm install` lines add to the tarballs, at the versions the repository pins
 * (so `npm ci` has them): where the guide names a version, it must be that one. And express, for
 * the backend.
 */
function guidePackages(): string[] {
  const names = new Set<string>()
  for (const section of SECTIONS) {
    for (const line of codeBlock(GUIDE, section, 'sh').split('\n')) {
      const words = line.replace(/#.*/, '').trim().split(/\s+/)
      if (words[0] !== 'npm' || words[1] !== 'install') continue
      for (const word of words.slice(2).filter((w) => !w.startsWith('-') && !w.startsWith('@symphony/'))) {
        const [, name = word, version] = /^(@?[^@]+)@(.+)$/.exec(word) ?? []
        if (version)
          assert.deepEqual(pinned(name), [`${name}@${version}`], `${section} installs what is tested`)
        names.add(name)
      }
    }
  }
  return [...pinned(...names), 'express@^5']
}

/** One editor of the guide: its page script, and how a test reads the page. */
interface EditorPage {
  heading: string
  lang: 'ts' | 'tsx'
  /** The guide's room, replaced by a new room per test. */
  room: string
  /** Where the guide names the user 'Ada': the page takes the name from `?name=` instead. */
  name: [from: string, to: string]
  /** Whether the guide gives CSS for the carets. */
  css: boolean
  /** The element one types into. */
  editable: string
  /** The blocks of text (paragraphs, lines) in the editable. */
  blocks: string
  /** Others' carets in the page (the caret DOM element), and the label with the name in one. */
  caret: string
  label: string
  /** Carets drawn inside the text, whose labels are not part of it. */
  inText?: string
}

const FROM_QUERY = "new URLSearchParams(location.search).get('name') ?? 'Ada'"

const EDITORS: Record<string, EditorPage> = {
  Tiptap: {
    heading: '## Tiptap',
    lang: 'ts',
    room: "'team-7/notes'",
    name: ["name: 'Ada'", `name: ${FROM_QUERY}`],
    css: true,
    editable: '#editor .ProseMirror',
    blocks: '#editor .ProseMirror p',
    caret: '#editor .collaboration-carets__caret',
    label: '.collaboration-carets__label',
    inText: '.collaboration-carets__caret',
  },
  CodeMirror: {
    heading: '## CodeMirror 6',
    lang: 'ts',
    room: "'team-7/code'",
    name: ["name: 'Ada'", `name: ${FROM_QUERY}`],
    css: false,
    editable: '#editor .cm-content',
    blocks: '#editor .cm-line',
    caret: '#editor .cm-ySelectionCaret',
    label: '.cm-ySelectionInfo',
    inText: '.cm-ySelectionCaret',
  },
  Lexical: {
    heading: '## Lexical',
    lang: 'tsx',
    room: "'team-7/story'",
    name: ['username="Ada"', `username={${FROM_QUERY}}`],
    css: false,
    editable: '#editor [contenteditable]',
    blocks: '#editor [contenteditable] p',
    // Lexical draws carets in a layer of its own at the end of the page, styled inline.
    caret: 'body > div:not(#editor) > span:has(> span)',
    label: 'span',
  },
}

describe(`the editors of ${GUIDE}, bound through the packed @symphony/client in Chromium`, () => {
  const suite = appSuite(guidePackages())
  let server: TestServer
  const errors: string[] = []
  before(async () => {
    server = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
  })
  after(() => server?.stop())

  /** A page of its own browser profile (its own IndexedDB, no tab to share with) at `url`. */
  async function open(url: string): Promise<Page> {
    const page = await (await suite.browser.newContext()).newPage()
    page.on('pageerror', (error) => errors.push(`${url}: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(`${url}: ${message.text()}`)
    })
    await page.goto(url)
    return page
  }

  it('type-checks every editor page of the guide against the packages’ declarations', () => {
    const files = SECTIONS.map((section, i) => {
      const lang = section === '## Lexical' ? 'tsx' : 'ts'
      writeFileSync(join(suite.app, `page-${i}.${lang}`), codeBlock(GUIDE, section, lang))
      return `page-${i}.${lang}`
    })
    typeCheck(suite.app, files)
  })

  for (const [name, editor] of Object.entries(EDITORS)) {
    it(`${name}: two people type into one paragraph, converge, see each other's named caret, and the server keeps the text`, async () => {
      const room = `team-7/${uniqueRoom(name.toLowerCase())}` // the backend's rule: rooms under team-7/
      let source = codeBlock(GUIDE, editor.heading, editor.lang)
      source = swap(source, "'ws://localhost:1234'", `'${server.wsUrl}'`)
      source = swap(source, `const ROOM = ${editor.room}`, `const ROOM = '${room}'`)
      source = swap(source, ...editor.name)
      const { code, inputs } = await bundleIn(suite.app, source, editor.lang)
      assert.ok(
        inputs.some((input) => input.includes('node_modules/@symphony/client/dist/')),
        'from the tarball',
      )
      const css = editor.css ? codeBlock(GUIDE, editor.heading, 'css') : ''
      const body = `<style>${css}</style><p id="status"></p><div id="editor"></div>`
      const site = await serveApp(code, { backend: suite.backend.url, body })
      suite.sites.push(site.server)

      // Ada starts the paragraph; Bob joins once it is there, and both type at its end at once.
      const ada = await open(`${site.url}?name=Ada`)
      await whenSynced(ada)
      await ada.click(editor.editable)
      await ada.keyboard.type('Hello')
      const bob = await open(`${site.url}?name=Bob`)
      await whenSynced(bob)
      await bob.waitForFunction(
        ({ selector }) => document.querySelector(selector)?.textContent?.includes('Hello'),
        { selector: editor.editable },
      )
      for (const page of [ada, bob]) {
        await page.click(editor.editable)
        await page.keyboard.press('End')
      }
      const typed = { ada: ' from Ada', bob: ' and Bob' }
      await Promise.all([
        ada.keyboard.type(typed.ada, { delay: 15 }),
        bob.keyboard.type(typed.bob, { delay: 15 }),
      ])

      // Both end with the same text, every keystroke of each in it, in one paragraph.
      const length = 'Hello'.length + typed.ada.length + typed.bob.length
      const texts = await Promise.all([ada, bob].map((page) => settledText(page, editor, length)))
      assert.equal(texts[0], texts[1], 'both converge')
      const text = texts[0] ?? ''
      assert.ok(text.startsWith('Hello'), text)
      assert.ok(isSubsequence(typed.ada, text.slice(5)) && isSubsequence(typed.bob, text.slice(5)), text)
      for (const page of [ada, bob])
        assert.equal(await page.locator(editor.blocks).count(), 1, 'one paragraph')

      // Each draws the other's caret, named.
      await waitForCaret(ada, editor, 'Bob')
      await waitForCaret(bob, editor, 'Ada')

      // Held by the server: a new browser profile (nothing in IndexedDB) gets the text from it,
      // and Bob's reload (IndexedDB and the server) shows it once.
      for (const page of [ada, bob]) await whenSynced(page)
      await ada.context().close()
      const carol = await open(`${site.url}?name=Carol`)
      await whenSynced(carol)
      assert.equal(await settledText(carol, editor, length), text)
      await bob.reload()
      await whenSynced(bob)
      assert.equal(await settledText(bob, editor, length), text)
      assert.equal(await bob.locator(editor.blocks).count(), 1, 'still one paragraph')
      assert.deepEqual(errors, [])
      await Promise.all([bob.context().close(), carol.context().close()])
    })
  }
})

/** Waits until the page's badge says the server holds every edit of it ('synced', not 'saving…'). */
async function whenSynced(page: Page): Promise<void> {
  await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'synced')
}

/** The editor's text, without carets' labels, once it is `length` characters long. */
async function settledText(page: Page, editor: EditorPage, length: number): Promise<string> {
  const read = ({ editable, inText }: { editable: string; inText: string | undefined }) => {
    const copy = document.querySelector(editable)?.cloneNode(true) as HTMLElement | undefined
    for (const drawn of Array.from(inText ? (copy?.querySelectorAll(inText) ?? []) : [])) drawn.remove()
    return (copy?.textContent ?? '').replaceAll('\u2060', '') // CodeMirror's caret joiners
  }
  const where = { editable: editor.editable, inText: editor.inText }
  await page.waitForFunction(`(${read})(${JSON.stringify(where)}).length === ${length}`)
  return page.evaluate(read, where)
}

/** Waits for a caret of someone else drawn with `name` in its label. */
async function waitForCaret(page: Page, editor: EditorPage, name: string): Promise<void> {
  await page.waitForFunction(
    ({ caret, label, name }) =>
      Array.from(document.querySelectorAll(caret)).some(
        (drawn) => drawn.querySelector(label)?.textContent === name,
      ),
    { caret: editor.caret, label: editor.label, name },
  )
}

/** Whether the characters of `part` appear in `whole` in order. */
function isSubsequence(part: string, whole: string): boolean {
  let at = 0
  for (const char of whole) if (char === part[at]) at++
  return at === part.length
}

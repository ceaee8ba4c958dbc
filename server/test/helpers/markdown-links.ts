import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, relative, resolve, sep } from 'node:path'

/** A link as written in a Markdown page: its target, and the line it is on. */
export interface MarkdownLink {
  target: string
  line: number
}

const FENCE = /^ *(`{3,}|~{3,})/

/** The page with every fenced code block blanked (lines kept, so line numbers stay right). */
function withoutFences(markdown: string): string[] {
  let fence: string | undefined
  return markdown.split('\n').map((line) => {
    const opener = FENCE.exec(line)?.[1]
    if (fence === undefined) {
      if (opener === undefined) return line
      fence = opener
      return ''
    }
    if (opener !== undefined && opener[0] === fence[0] && opener.length >= fence.length) fence = undefined
    return ''
  })
}

/** Code spans replaced by their length in spaces: links inside code are not links. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1/g, (span) => span.replace(/[^\n]/g, ' '))
}

const INLINE_LINK = /!?\[[^\]]*\]\(\s*<?([^\s)>]*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g
const REFERENCE_DEFINITION = /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/gm
const HTML_LINK = /<(?:a|img)\s[^>]*?(?:href|src)="([^"]*)"/gi

/** Every link target of a page (inline, images, reference definitions, HTML), outside code. */
export function linksOf(markdown: string): MarkdownLink[] {
  const lines = withoutFences(markdown)
  const links: MarkdownLink[] = []
  // Code spans may wrap across lines, never across a blank line: blank them paragraph by paragraph.
  let start = 0
  for (let index = 0; index <= lines.length; index++) {
    if (index < lines.length && (lines[index] as string).trim() !== '') continue
    const paragraph = withoutCodeSpans(lines.slice(start, index).join('\n'))
    for (const pattern of [INLINE_LINK, REFERENCE_DEFINITION, HTML_LINK]) {
      for (const match of paragraph.matchAll(pattern)) {
        const line = start + 1 + paragraph.slice(0, match.index).split('\n').length - 1
        links.push({ target: match[1] as string, line })
      }
    }
    start = index + 1
  }
  return links
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, each space a `-`. */
export function slugOf(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image: its text
    .replace(/<[^>]+>/g, '') // HTML tags
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** The anchors of a page's headings, repeats numbered as GitHub does (`x`, `x-1`, `x-2`). */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of withoutFences(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1]
    if (heading === undefined) continue
    const slug = slugOf(heading)
    const repeats = seen.get(slug) ?? 0
    seen.set(slug, repeats + 1)
    anchors.add(repeats === 0 ? slug : `${slug}-${repeats}`)
  }
  return anchors
}

/**
 * What is wrong with the links of `page` (a path inside `root`): a relative target that does not
 * exist or leaves the repository, an absolute path, or an anchor no heading of its page makes.
 * Links with a scheme (`https:`, `mailto:`) point outside the repository and are not followed.
 */
export function brokenLinks(root: string, page: string): string[] {
  const file = resolve(root, page)
  const problems: string[] = []
  for (const { target, line } of linksOf(readFileSync(file, 'utf8'))) {
    const where = `${page}:${line}: ${target}`
    if (/^[a-z][a-z\d+.-]*:/i.test(target) && !/^file:/i.test(target)) continue
    if (target === '' || target.startsWith('/') || /^file:/i.test(target)) {
      problems.push(`${where}: links inside the repository are relative`)
      continue
    }
    const hash = target.indexOf('#')
    const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash))
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1))
    const linked = path === '' ? file : resolve(dirname(file), path)
    const inside = relative(root, linked)
    if (inside.startsWith(`..${sep}`) || inside === '..') {
      problems.push(`${where}: outside the repository`)
      continue
    }
    if (!existsSync(linked)) {
      problems.push(`${where}: no such file`)
      continue
    }
    if (anchor === undefined) continue
    if (statSync(linked).isDirectory() || !linked.endsWith('.md')) {
      problems.push(`${where}: an anchor into a page that is not Markdown`)
      continue
    }
    if (!anchorsOf(readFileSync(linked, 'utf8')).has(anchor)) {
      problems.push(`${where}: no heading makes #${anchor}`)
    }
  }
  return problems
}

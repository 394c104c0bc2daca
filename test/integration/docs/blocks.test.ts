import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  EXEMPT,
  RUN,
  ROOT,
  anchorOf,
  commandBlocks,
  commands,
  documents,
  firstLine,
  moveAddresses,
  readDocument,
  relativeLinks,
} from '../../helpers/doc-blocks.js'

/*
 * What the documents promise as a whole: every command block of the README and the guides is
 * run by a test of this folder or exempt by name with a reason (a new one fails here until it
 * is either), no example sends a client secret in a URL, the README stays a front door, and
 * every relative link leads to a file and heading that exist.
 */

describe('the command blocks of README.md and docs/', () => {
  it("move a reader's addresses to the test's ports once, whatever ports those are", () => {
    // A Gatehouse on port 40023 must not be taken for the reader's example MCP server on 4002.
    const at = { gatehouse: 'http://127.0.0.1:40023', apiPort: 40001, rpPort: 40010, mcpPort: 38683 }
    const text = 'http://127.0.0.1:3000/verify 127.0.0.1:4000/me localhost:4001/cb 127.0.0.1:4002/mcp PORT=4000 PORT=4002'
    expect(moveAddresses(text, at)).toBe(
      'http://127.0.0.1:40023/verify 127.0.0.1:40001/me localhost:40010/cb 127.0.0.1:38683/mcp PORT=40001 PORT=38683',
    )
  })

  it('are each run by a test (RUN) or exempt by name (EXEMPT)', () => {
    const unhandled = documents()
      .flatMap(commandBlocks)
      .filter((b) => !(RUN[b.file] ?? []).some((title) => b.headings.includes(title)) && !(firstLine(b) in EXEMPT))
      .map((b) => `${b.file} under "${b.headings.at(-1)}": ${firstLine(b)}`)
    // Each needs a test in test/integration/docs/ and its section in RUN, or an EXEMPT entry with
    // its reason (test/helpers/doc-blocks.ts); a block not meant to be run is written ```text.
    expect(unhandled).toEqual([])
  })

  it('has no EXEMPT entry that names no block any more', () => {
    const firsts = new Set(documents().flatMap(commandBlocks).map(firstLine))
    expect(Object.keys(EXEMPT).filter((line) => !firsts.has(line))).toEqual([])
  })

  it('has a RUN section for each heading it names', () => {
    for (const [file, titles] of Object.entries(RUN)) {
      const headings = new Set(commandBlocks(file).flatMap((b) => b.headings))
      for (const title of titles) expect(headings, `${file} "${title}"`).toContain(title)
    }
  })

  it('parse: no block starts with a comment, each command is one line or continued with \\', () => {
    for (const block of documents().flatMap(commandBlocks)) expect(() => commands(block), `${block.file}: ${block.text}`).not.toThrow()
  })

  it('never send a client secret in a URL (RFC 6749 2.3.1)', () => {
    const inUrl = documents()
      .flatMap(commandBlocks)
      .filter((b) => /[?&]client_secret=/.test(b.text))
      .map((b) => `${b.file}: ${firstLine(b)}`)
    expect(inUrl).toEqual([])
  })
})

describe('the documents', () => {
  it('keep the README a front door: at most 400 lines', () => {
    expect(readDocument('README.md').split('\n').length).toBeLessThanOrEqual(400)
  })

  it('start each guide with its title and one sentence saying what it is for', () => {
    for (const file of documents().filter((f) => f !== 'README.md')) {
      const [title, blank, ...rest] = readDocument(file).split('\n')
      expect(title, file).toMatch(/^# \S/)
      expect(blank, file).toBe('')
      // The first paragraph is prose, not a list, a table, a block or a heading, and ends a sentence.
      const paragraph = rest.slice(0, rest.indexOf('')).join(' ')
      expect(paragraph, file).toMatch(/^[A-Z`[].*\.$/)
    }
  })

  it('link only to files and headings that exist', () => {
    const broken: string[] = []
    for (const file of documents()) {
      for (const link of relativeLinks(file)) {
        if (!existsSync(join(ROOT, link.target))) {
          broken.push(`${file}: ${link.href} (no such file)`)
          continue
        }
        if (link.anchor === '' || !link.target.endsWith('.md')) continue
        const anchors = new Set(
          readDocument(link.target)
            .replace(/^ *```[\s\S]*?^ *```$/gm, '')
            .split('\n')
            .filter((l) => /^#{1,6} /.test(l))
            .map((l) => anchorOf(l.replace(/^#+ /, ''))),
        )
        if (!anchors.has(link.anchor)) broken.push(`${file}: ${link.href} (no such heading)`)
      }
    }
    expect(broken).toEqual([])
  })
})

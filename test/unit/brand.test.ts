import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { MAX_LOGO_BYTES, accentColorProblem, contrastRatio, logoTypeOf, logoUrl } from '../../src/lib/brand.js'
import { configRefusal } from '../helpers/config-refusal.js'

/*
 * The brand settings (src/lib/brand.ts): an accent colour refused below WCAG AA contrast, and a
 * logo file judged by its bytes and size, each refused at start-up with a message saying why.
 */
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-brand-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A 1x1 PNG (PNG specification 5.2 signature, IHDR, IDAT, IEND). */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')
const SVG = '<?xml version="1.0"?>\n<!-- logo -->\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>\n'

function file(name: string, content: string | Buffer): string {
  const path = join(dir, name)
  writeFileSync(path, content)
  return path
}

describe('accent colour', () => {
  it('computes WCAG contrast ratios', () => {
    expect(contrastRatio('#000000', '#ffffff')).toBeCloseTo(21, 5)
    expect(contrastRatio('#ffffff', '#ffffff')).toBe(1)
    // Gatehouse's own accent: 5.2:1 on white.
    expect(contrastRatio('#0969da', '#ffffff')).toBeCloseTo(5.19, 2)
  })

  it('accepts a dark enough colour, in either case, and uses it', () => {
    expect(accentColorProblem('#1F6F43')).toBeUndefined()
    expect(loadConfig({ BRAND_ACCENT_COLOR: '#1F6F43' }).brand.accentColor).toBe('#1f6f43')
  })

  it('refuses a colour that is not #rrggbb', () => {
    for (const bad of ['red', '#abc', '1f6f43', '#1f6f43;}body{display:none', 'url(x)']) {
      expect(configRefusal({ BRAND_ACCENT_COLOR: bad })).toContain('BRAND_ACCENT_COLOR: must be a colour written #rrggbb')
    }
  })

  it('refuses a colour on which white text would fail AA, saying the ratio and the rule', () => {
    const text = configRefusal({ BRAND_ACCENT_COLOR: '#58a6ff' })
    expect(text).toContain('BRAND_ACCENT_COLOR: #58a6ff against white has a contrast of 2.')
    expect(text).toContain('below the 4.5:1 that WCAG 2.2 AA asks for text')
    expect(text).toContain('choose a darker shade')
  })
})

describe('logo file', () => {
  it('reads a PNG and an SVG by their content, whatever their names', () => {
    const png = loadConfig({ BRAND_LOGO_FILE: file('logo.svg', PNG) }).brand.logo
    expect(png?.type).toBe('image/png')
    expect(png?.bytes.equals(PNG)).toBe(true)
    const svg = loadConfig({ BRAND_LOGO_FILE: file('logo.png', SVG) }).brand.logo
    expect(svg?.type).toBe('image/svg+xml')
    expect(logoUrl(svg!)).toMatch(/^\/static\/brand-logo\?v=[A-Za-z0-9_-]{12}$/)
    expect(logoUrl(svg!)).not.toBe(logoUrl(png!))
  })

  it('refuses a file of another type, judged by its bytes', () => {
    const gif = file('logo.gif.png', Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'))
    expect(configRefusal({ BRAND_LOGO_FILE: gif })).toContain(`BRAND_LOGO_FILE: ${gif} is neither a PNG nor an SVG file`)
    const html = file('page.svg', '<html><svg></svg></html>')
    expect(configRefusal({ BRAND_LOGO_FILE: html })).toContain('is neither a PNG nor an SVG file')
    expect(logoTypeOf(Buffer.from(''))).toBeUndefined()
  })

  it('refuses a file over the size cap', () => {
    const big = file('big.png', Buffer.concat([PNG, Buffer.alloc(MAX_LOGO_BYTES)]))
    expect(configRefusal({ BRAND_LOGO_FILE: big })).toContain(
      `BRAND_LOGO_FILE: ${big} is ${PNG.length + MAX_LOGO_BYTES} bytes; a logo may be at most`,
    )
    expect(
      loadConfig({ BRAND_LOGO_FILE: file('edge.png', Buffer.concat([PNG, Buffer.alloc(MAX_LOGO_BYTES - PNG.length)])) }).brand.logo?.type,
    ).toBe('image/png')
  })

  it('refuses a missing file and a directory', () => {
    expect(configRefusal({ BRAND_LOGO_FILE: join(dir, 'missing.png') })).toContain('cannot read')
    expect(configRefusal({ BRAND_LOGO_FILE: dir })).toContain(`cannot read ${dir}: it must be a readable PNG or SVG file`)
  })
})

import { createHash } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'

/*
 * The operator's brand beyond SERVICE_NAME: an accent colour and a logo (docs/operating/branding.md).
 * Both are checked once, at start-up, so a page never shows what a person cannot read and the
 * logo route never serves anything but one PNG or SVG file.
 */

/** The colour of links, buttons and focus rings when BRAND_ACCENT_COLOR is unset. */
export const DEFAULT_ACCENT_COLOR = '#0969da'

/** WCAG 2.2 1.4.3 (Contrast, Minimum, level AA): normal-size text needs 4.5:1. */
export const AA_CONTRAST = 4.5

/** The largest logo accepted: a header logo is a few kilobytes; this bounds memory and every page's download. */
export const MAX_LOGO_BYTES = 100 * 1024

/** The WCAG 2.2 relative luminance of a #rrggbb colour (WCAG 2.2, "relative luminance"). */
function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16) / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }
  return 0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2)
}

/** The WCAG 2.2 contrast ratio of two #rrggbb colours, from 1 to 21 (WCAG 2.2, "contrast ratio"). */
export function contrastRatio(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number]
  return (hi + 0.05) / (lo + 0.05)
}

/**
 * Why an accent colour cannot be used, or undefined when it can. The accent is the colour of
 * white button text's background and of links on the white page, so both need AA contrast
 * against white (the same ratio, as contrast is symmetric).
 */
export function accentColorProblem(value: string): string | undefined {
  if (!/^#[0-9a-fA-F]{6}$/.test(value)) return 'must be a colour written #rrggbb, e.g. #0969da'
  const ratio = contrastRatio(value, '#ffffff')
  if (ratio >= AA_CONTRAST) return undefined
  return (
    `${value} against white has a contrast of ${ratio.toFixed(2)}:1, below the 4.5:1 that WCAG 2.2 AA asks for text ` +
    '(white button text on the accent, and accent links on the white page); choose a darker shade'
  )
}

export type LogoType = 'image/png' | 'image/svg+xml'

export interface BrandLogo {
  readonly type: LogoType
  readonly bytes: Buffer
  /** A digest of the bytes: the logo's URL names it, so a changed logo is a new URL for every cache. */
  readonly version: string
}

/** The brand settings after start-up's checks: what every page and mail shows. */
export interface Brand {
  readonly accentColor: string
  readonly logo: BrandLogo | undefined
}

/** Where every page and mail finds the logo; the query names its version (see BrandLogo.version). */
export const LOGO_PATH = '/static/brand-logo'

export function logoUrl(logo: BrandLogo): string {
  return `${LOGO_PATH}?v=${logo.version}`
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/**
 * The type of a logo file by its first bytes, never by its name: a PNG by its signature (PNG
 * specification, 5.2), an SVG by an <svg> root element after an optional XML declaration,
 * doctype and comments; undefined for anything else.
 */
export function logoTypeOf(bytes: Buffer): LogoType | undefined {
  if (bytes.subarray(0, 8).equals(PNG_SIGNATURE)) return 'image/png'
  const head = bytes
    .subarray(0, 4096)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
  const prolog = /^\s*(<\?xml[^>]*\?>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>]*>\s*)*<svg[\s>]/i
  return prolog.test(head) ? 'image/svg+xml' : undefined
}

/**
 * Reads and checks BRAND_LOGO_FILE once at start-up; throws an Error whose message says what is
 * wrong (the file's path is the operator's own, so it is named).
 */
export function readBrandLogo(path: string): BrandLogo {
  let size: number
  try {
    const stat = statSync(path)
    if (!stat.isFile()) throw new Error('not a file')
    size = stat.size
  } catch {
    throw new Error(`cannot read ${path}: it must be a readable PNG or SVG file`)
  }
  if (size > MAX_LOGO_BYTES) throw new Error(`${path} is ${size} bytes; a logo may be at most ${MAX_LOGO_BYTES} bytes (100 KiB)`)
  const bytes = readFileSync(path)
  const type = logoTypeOf(bytes)
  if (type === undefined) throw new Error(`${path} is neither a PNG nor an SVG file (judged by its content, not its name)`)
  return Object.freeze({ type, bytes, version: createHash('sha256').update(bytes).digest('base64url').slice(0, 12) })
}

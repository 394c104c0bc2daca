import { hasControlCharacter } from '../../../lib/text.js'

/** A search box's text: a single string without control characters, at most 200 characters. */
export function searchQuery(v: unknown): string {
  return typeof v === 'string' && !hasControlCharacter(v) ? v.trim().slice(0, 200) : ''
}

/** ?page=N, 1 when absent or not a sensible number. */
export function pageNumber(v: unknown): number {
  const n = typeof v === 'string' && /^\d{1,6}$/.test(v) ? Number(v) : 1
  return n >= 1 ? n : 1
}

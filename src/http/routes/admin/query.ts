import { hasControlCharacter } from '../../../lib/text.js'
import { OPERATOR_PAGE_SIZE } from '../../../operator/index.js'

/** A search box's text: a single string without control characters, at most 200 characters. */
export function searchQuery(v: unknown): string {
  return typeof v === 'string' && !hasControlCharacter(v) ? v.trim().slice(0, 200) : ''
}

/** ?page=N, 1 when absent or not a sensible number. */
export function pageNumber(v: unknown): number {
  const n = typeof v === 'string' && /^\d{1,6}$/.test(v) ? Number(v) : 1
  return n >= 1 ? n : 1
}

/** What a search page (users, applications) was asked: its search text and page number. */
export function listRequest(query: { q?: unknown; page?: unknown }): { query: string; page: number } {
  return { query: searchQuery(query.q), page: pageNumber(query.page) }
}

/** What every search page shows around its rows: the search, the page, "deleted", and whether a next page exists. */
export function listView(asked: { query: string; page: number }, deleted: unknown, rows: number) {
  return { q: asked.query, page: asked.page, deleted: deleted === '1', hasMore: rows === OPERATOR_PAGE_SIZE }
}

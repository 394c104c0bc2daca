import { describe, expect, it } from 'vitest'
import { generateClientId } from '../../src/lib/tokens.js'

describe('generateClientId', () => {
  it('issues 24 base64url characters that never begin with "-"', () => {
    // One in 64 random ids would begin with "-"; 4,000 of them make a miss all but impossible.
    const ids = Array.from({ length: 4000 }, generateClientId)
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{23}$/)
    expect(new Set(ids).size).toBe(ids.length)
  })
})

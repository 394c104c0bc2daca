import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ACCESS_TOKEN_PREFIX, formatAccessToken, isWellFormedAccessToken } from '../src/token-format.js'

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const body = fc.string({ unit: fc.constantFrom(...ALPHABET), minLength: 43, maxLength: 43 })

describe('the access-token format (docs/decisions/002-token-format.md)', () => {
  it('accepts every token it formats', () => {
    fc.assert(fc.property(body, (b) => isWellFormedAccessToken(formatAccessToken(b))))
  })

  it('refuses every other checksum, the non-canonical spellings of the right one included', () => {
    // Each of the six checksum characters replaced by each other character: 378 texts per token,
    // among them the 15 that base64url decoders read as the same four bytes (the last
    // character's four unused bits set).
    fc.assert(
      fc.property(body, (b) => {
        const token = formatAccessToken(b)
        const at = ACCESS_TOKEN_PREFIX.length + 43
        for (let i = at; i < token.length; i++) {
          for (const c of ALPHABET) {
            if (c === token[i]) continue
            const altered = token.slice(0, i) + c + token.slice(i + 1)
            if (isWellFormedAccessToken(altered)) return false
          }
        }
        return true
      }),
      { numRuns: 50 },
    )
  })

  it('refuses a changed body, a wrong length, a wrong prefix and characters outside base64url', () => {
    const token = formatAccessToken('A'.repeat(43))
    const flipped = token.slice(0, 10) + (token[10] === 'B' ? 'C' : 'B') + token.slice(11)
    expect(isWellFormedAccessToken(token)).toBe(true)
    expect(isWellFormedAccessToken(flipped)).toBe(false)
    expect(isWellFormedAccessToken(token.slice(0, -1))).toBe(false)
    expect(isWellFormedAccessToken(`${token}A`)).toBe(false)
    expect(isWellFormedAccessToken(`gas_${token.slice(4)}`)).toBe(false)
    expect(isWellFormedAccessToken(`${token.slice(0, -1)}=`)).toBe(false)
    expect(isWellFormedAccessToken(`${token.slice(0, -6)}${'\u00e9'.repeat(6)}`)).toBe(false)
  })
})

import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SEED_SCOPES, ScopeFileError, parseScopesFile, scopeCheck, withImplied } from '@gatehouse/verifier/shared'
import { ConfigError, loadConfig } from '../../src/config.js'
import { ScopeVocabulary } from '../../src/oauth/grants/scope.js'

/* The scopes file (docs/operating/scopes.md): what it accepts, and the message for what it refuses. */

const parse = (content: unknown) => parseScopesFile(typeof content === 'string' ? content : JSON.stringify(content), 'scopes.json')

function refusal(content: unknown): string {
  try {
    parse(content)
  } catch (err) {
    expect(err).toBeInstanceOf(ScopeFileError)
    return (err as Error).message
  }
  throw new Error(`expected ${JSON.stringify(content)} to be refused`)
}

const INVOICES = {
  scopes: [
    { name: 'invoices:read', description: 'See your invoices' },
    { name: 'invoices:write', description: 'Create and change your invoices', implies: ['invoices:read'] },
    { name: 'reports', description: '  See reports  ', implies: ['invoices:write'] },
  ],
  default: ['invoices:read'],
}

describe('a scopes file', () => {
  it('gives the scopes in its order, with their words, implications and default', () => {
    const catalogue = parse(INVOICES)
    expect(catalogue.scopes).toEqual([
      { name: 'invoices:read', description: 'See your invoices', implies: [] },
      { name: 'invoices:write', description: 'Create and change your invoices', implies: ['invoices:read'] },
      { name: 'reports', description: 'See reports', implies: ['invoices:write'] },
    ])
    expect(catalogue.defaultScopes).toEqual(['invoices:read'])
    expect(catalogue.impliedAt).toBe('grant')
    expect(parse({ scopes: INVOICES.scopes }).defaultScopes).toEqual([])
  })

  it.each([
    ['not JSON', '{ scopes: [', /^Scopes file scopes\.json: is not JSON/],
    ['a list', [], /must be a JSON object with a "scopes" list$/],
    ['no scopes', { scopes: [] }, /"scopes" must be a non-empty list$/],
    ['an unknown key', { ...INVOICES, colour: 'red' }, /unknown key "colour" \(allowed: scopes, default\)$/],
    [
      'a scope with a space',
      { scopes: [{ name: 'invoices read', description: 'x' }] },
      /scopes\[0\]\.name "invoices read" is not a scope token/,
    ],
    ['a quote', { scopes: [{ name: 'say"hi', description: 'x' }] }, /is not a scope token \(RFC 6749 3\.3/],
    ['non-ASCII', { scopes: [{ name: 'rechnungé', description: 'x' }] }, /"rechnung\?" is not a scope token/],
    ['an overlong name', { scopes: [{ name: 'a'.repeat(65), description: 'x' }] }, /scopes\[0\]\.name is longer than 64 characters$/],
    ['a duplicate', { scopes: [INVOICES.scopes[0], INVOICES.scopes[0]] }, /scope "invoices:read" is defined twice$/],
    ['an OpenID scope', { scopes: [{ name: 'openid', description: 'x' }] }, /"openid" is an OpenID Connect scope/],
    ['no description', { scopes: [{ name: 'a' }] }, /scopes\[0\] \("a"\) needs a "description"$/],
    ['a blank description', { scopes: [{ name: 'a', description: '   ' }] }, /needs a "description"$/],
    ['a long description', { scopes: [{ name: 'a', description: 'x'.repeat(201) }] }, /"description" is longer than 200 characters$/],
    ['a control character', { scopes: [{ name: 'a', description: 'x\u0007' }] }, /"description" contains control characters$/],
    [
      'an unknown implication',
      { scopes: [{ name: 'a', description: 'x', implies: ['b'] }] },
      /scope "a" implies "b", which the file does not define$/,
    ],
    ['a self-implication', { scopes: [{ name: 'a', description: 'x', implies: ['a'] }] }, /scope "a" implies itself$/],
    [
      'implies not a list',
      { scopes: [{ name: 'a', description: 'x', implies: 'b' }] },
      /scopes\[0\]\.implies must be a list of scope names$/,
    ],
    [
      'an unknown default',
      { scopes: [{ name: 'a', description: 'x' }], default: ['b'] },
      /"default" names "b", which the file does not define$/,
    ],
    ['an extra field', { scopes: [{ name: 'a', description: 'x', label: 'y' }] }, /unknown key "label"/],
    [
      'too many scopes',
      { scopes: Array.from({ length: 201 }, (_, i) => ({ name: `s${i}`, description: 'x' })) },
      /has 201 entries, at most 200/,
    ],
  ])('refuses %s, naming the file and the problem', (_, content, message) => {
    const text = refusal(content)
    expect(text).toMatch(/^Scopes file scopes\.json: /)
    expect(text).toMatch(message)
    expect(text).not.toContain('\n')
  })

  it('stops loadConfig with a ConfigError naming SCOPES_FILE and the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-scopes-unit-'))
    const bad = join(dir, 'bad.json')
    writeFileSync(bad, JSON.stringify({ scopes: [{ name: 'a', description: 'x', implies: ['b'] }] }))
    const good = join(dir, 'good.json')
    writeFileSync(good, JSON.stringify(INVOICES))
    expect(() => loadConfig({ SCOPES_FILE: bad })).toThrow(ConfigError)
    expect(() => loadConfig({ SCOPES_FILE: bad })).toThrow(
      `SCOPES_FILE: Scopes file ${bad}: scope "a" implies "b", which the file does not define`,
    )
    expect(() => loadConfig({ SCOPES_FILE: join(dir, 'missing.json') })).toThrow(/cannot be read \(ENOENT\)/)
    expect(loadConfig({ SCOPES_FILE: good }).scopes).toEqual(parse(INVOICES))
    expect(loadConfig({}).scopes).toBe(SEED_SCOPES)
  })
})

describe('implications', () => {
  const catalogue = parse(INVOICES)

  it('are followed through other scopes when the grant is made, in the canonical order', () => {
    expect(withImplied(catalogue, ['reports'])).toEqual(['invoices:read', 'invoices:write', 'reports'])
    const vocabulary = new ScopeVocabulary(catalogue)
    expect(vocabulary.parse('reports openid')).toEqual(['openid', 'invoices:read', 'invoices:write', 'reports'])
    expect(vocabulary.parse(undefined)).toEqual(['invoices:read'])
    expect(() => vocabulary.parse('read')).toThrow(/^Unknown scope: read$/)
  })

  it('the application may be allowed only the scope it asks for; what it implies comes with it', () => {
    expect(new ScopeVocabulary(catalogue).parse('invoices:write', ['invoices:write'])).toEqual(['invoices:read', 'invoices:write'])
  })

  it('asks for scope when the file names no default', () => {
    expect(() => new ScopeVocabulary(parse({ scopes: INVOICES.scopes })).parse('')).toThrow(/^The scope parameter is required$/)
  })

  it('are not applied when a token is checked under a file: the token holds what was granted', () => {
    const check = scopeCheck(catalogue)
    expect(check(['invoices:read', 'invoices:write'], 'invoices:read')).toBe(true)
    // A token granted invoices:write alone (before the file made it imply invoices:read) stays so.
    expect(check(['invoices:write'], 'invoices:read')).toBe(false)
    // A scope the file does not define grants nothing.
    expect(check(['write'], 'write')).toBe(false)
    expect(check(['openid'], 'openid')).toBe(true)
  })

  it("keep the built-in seed's rule: write covers every write_* when a token is checked", () => {
    const check = scopeCheck(SEED_SCOPES)
    expect(check(['write'], 'write_teams')).toBe(true)
    expect(check(['write'], 'read')).toBe(false)
    expect(new ScopeVocabulary(SEED_SCOPES).parse('write')).toEqual(['write'])
  })
})

import { describe, expect, it } from 'vitest'
import { sameCodeFlowSettings } from '../../src/oauth/authorize/authorize.js'
import { CODE_FLOW_SETTINGS, type CodeFlowSettings } from '../../src/repositories/authorization-codes.js'

/*
 * CODE_FLOW_SETTINGS is the one definition of "the application is unchanged" for the
 * remembered-consent statement (docs/decisions/004-caching-and-ttl-bounds.md): the SQL compares
 * these columns, and sameCodeFlowSettings must compare exactly the same ones.
 */
const base: CodeFlowSettings = {
  id: '00000000-0000-4000-8000-000000000001',
  client_id: 'client',
  redirect_uris: ['https://a.example/cb', 'https://b.example/cb'],
  allowed_scopes: ['read', 'write'],
  require_pkce: false,
  require_pushed_requests: false,
}

const changed: { [K in keyof CodeFlowSettings]: CodeFlowSettings[K] } = {
  id: '00000000-0000-4000-8000-000000000002',
  client_id: 'other',
  redirect_uris: ['https://b.example/cb', 'https://a.example/cb'],
  allowed_scopes: ['read'],
  require_pkce: true,
  require_pushed_requests: true,
}

describe('sameCodeFlowSettings', () => {
  it('holds for equal settings, whatever else the rows carry', () => {
    expect(sameCodeFlowSettings(base, { ...base, redirect_uris: [...base.redirect_uris] })).toBe(true)
    expect(sameCodeFlowSettings(base, { ...base, name: 'renamed' } as CodeFlowSettings)).toBe(true)
  })

  it.each(CODE_FLOW_SETTINGS)('fails when %s differs (arrays compare in order, as SQL = does)', (column) => {
    expect(sameCodeFlowSettings(base, { ...base, [column]: changed[column] })).toBe(false)
  })
})

import { describe, expect, it } from 'vitest'
import { AUDIT_DETAIL_MAX, auditDetail, describeAuditEvent } from '../../src/audit/audit-log.js'
import { formatAuditCursor, parseAuditCursor } from '../../src/audit/audit-pages.js'
import { boundedLine } from '../../src/lib/text.js'

describe('boundedLine', () => {
  it('removes control characters and surrounding space', () => {
    expect(boundedLine(' a\u0000b\u001b[31mc\u0085d\r\n ', 50)).toBe('ab[31mcd')
  })

  it('cuts at a character, never inside one, and marks the cut', () => {
    expect(boundedLine('abcdef', 6)).toBe('abcdef')
    expect(boundedLine('abcdefg', 6)).toBe('abcde…')
    expect(boundedLine('😀😀😀😀', 3)).toBe('😀😀…')
  })
})

describe('audit details', () => {
  it('name the settings that changed, never their values', () => {
    const none = {
      name: false,
      description: false,
      redirectUris: false,
      postLogoutRedirectUris: false,
      allowedScopes: false,
      requirePkce: false,
      allowImplicit: false,
      requirePushedRequests: false,
      idTokenAlg: false,
      allowDeviceFlow: false,
    }
    expect(auditDetail.applicationChanged(none, 'Old')).toBe('Saved without changes')
    expect(auditDetail.applicationChanged({ ...none, redirectUris: true, allowImplicit: true }, 'Old')).toBe(
      'Changed: redirect URIs, token flow',
    )
    expect(auditDetail.applicationChanged({ ...none, postLogoutRedirectUris: true }, 'Old')).toBe('Changed: post-logout redirect URIs')
    expect(auditDetail.applicationChanged({ ...none, allowDeviceFlow: true }, 'Old')).toBe('Changed: device flow')
    expect(auditDetail.applicationChanged({ ...none, name: true, requirePkce: true }, 'Old\u0007 Name')).toBe(
      'Changed: name, PKCE requirement; previously named "Old Name"',
    )
  })

  it('stay within the bound whatever the application is called', () => {
    const all = {
      name: true,
      description: true,
      redirectUris: true,
      postLogoutRedirectUris: true,
      allowedScopes: true,
      requirePkce: true,
      allowImplicit: true,
      requirePushedRequests: true,
      idTokenAlg: true,
      allowDeviceFlow: true,
    }
    expect(auditDetail.applicationChanged(all, 'x'.repeat(1000)).length).toBeLessThanOrEqual(AUDIT_DETAIL_MAX)
  })

  it('count tokens in plain words', () => {
    expect(auditDetail.tokensRevoked(0)).toBe('0 access tokens revoked')
    expect(auditDetail.tokensRevoked(1)).toBe('1 access token revoked')
    expect(auditDetail.grantGiven(['read', 'write'], 'token')).toBe('Scopes: read write; access token (token flow) issued')
  })

  it('describe events in plain words, and an unknown event by its name', () => {
    expect(describeAuditEvent('user.login_failed')).toBe('Log-in failed')
    expect(describeAuditEvent('operator.user_suspended')).toBe('Account suspended by the operator')
    expect(describeAuditEvent('future.event')).toBe('future.event')
    expect(describeAuditEvent('toString')).toBe('toString')
  })
})

describe('Security log cursors', () => {
  it('read back what they wrote', () => {
    const row = { occurred_at: new Date('2026-05-01T10:00:00.123Z'), id: '4711' }
    expect(parseAuditCursor(formatAuditCursor(row))).toEqual({ occurredAt: row.occurred_at, id: '4711' })
  })

  it.each([undefined, 42, ['1.1'], '', '1', '1.', '.1', '1.1.1', '-1.1', '1.-1', '1e3.1', '1234567890123456.1', '1.1234567890123456789'])(
    'ignore %j',
    (value) => {
      expect(parseAuditCursor(value)).toBeUndefined()
    },
  )
})

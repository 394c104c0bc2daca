import { describe, expect, it } from 'vitest'
import {
  knownTransports,
  parseAuthenticationResponse,
  parsePasskeyName,
  parseRegistrationResponse,
  relyingPartyOf,
  userHandleBase64Url,
} from '../../src/accounts/second-factor/webauthn.js'

/* The pure parts of passkeys (src/accounts/second-factor/webauthn.ts): the relying party, names, and the shape checks before the library reads a response. */

describe('relyingPartyOf', () => {
  it('takes the RP ID from PUBLIC_URL’s host and the origin from its origin, ignoring a path', () => {
    expect(relyingPartyOf({ publicUrl: 'https://auth.example.com/gatehouse', serviceName: 'Gatehouse' })).toEqual({
      id: 'auth.example.com',
      origin: 'https://auth.example.com',
      name: 'Gatehouse',
    })
    expect(relyingPartyOf({ publicUrl: 'http://localhost:3000', serviceName: 'G' })).toMatchObject({
      id: 'localhost',
      origin: 'http://localhost:3000',
    })
  })
})

describe('parsePasskeyName', () => {
  it('trims, and accepts 1 to 64 characters without control characters', () => {
    expect(parsePasskeyName('  Laptop ')).toBe('Laptop')
    expect(parsePasskeyName('x'.repeat(64))).toBe('x'.repeat(64))
    for (const bad of ['', '   ', 'x'.repeat(65), 'a\u0000b', 'a\nb', 7, undefined, ['Laptop']])
      expect(parsePasskeyName(bad)).toBeUndefined()
  })
})

describe('responses', () => {
  const assertion = {
    id: 'AAEC',
    rawId: 'AAEC',
    type: 'public-key',
    clientExtensionResults: {},
    response: { clientDataJSON: 'eyJ9', authenticatorData: 'AAAA', signature: 'MEUC' },
  }
  it('accepts the JSON shape the browser library sends, and nothing else', () => {
    expect(parseAuthenticationResponse(assertion)).toEqual(assertion)
    expect(parseAuthenticationResponse({ ...assertion, type: 'password' })).toBeUndefined()
    expect(parseAuthenticationResponse({ ...assertion, id: 'not base64url!' })).toBeUndefined()
    expect(parseAuthenticationResponse({ ...assertion, id: 'A'.repeat(1367) })).toBeUndefined()
    expect(parseAuthenticationResponse({ ...assertion, response: { ...assertion.response, signature: 7 } })).toBeUndefined()
    expect(parseAuthenticationResponse('{}')).toBeUndefined()
    expect(parseRegistrationResponse(assertion)).toBeUndefined()
    expect(
      parseRegistrationResponse({
        ...assertion,
        response: { clientDataJSON: 'eyJ9', attestationObject: 'o2Nm', transports: ['internal'] },
      }),
    ).toBeDefined()
  })

  it('keeps only the transports WebAuthn defines, once each', () => {
    expect(knownTransports(['usb', 'internal', 'usb', 'carrier-pigeon'])).toEqual(['usb', 'internal'])
    expect(knownTransports(undefined)).toEqual([])
  })

  it('makes the user handle from the account id, never the email', () => {
    expect(userHandleBase64Url('6f1c0b6e-0000-4000-8000-000000000000')).toBe(
      Buffer.from('6f1c0b6e-0000-4000-8000-000000000000').toString('base64url'),
    )
  })
})

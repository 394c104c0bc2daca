import { describe, expect, it } from 'vitest'
import { newPasswordField, parseCredentials } from '../../src/accounts/login/credentials.js'
import { passwordResetNoAccountMail, signUpAttemptMail, verificationMail } from '../../src/accounts/mails.js'
import { isCommonPassword } from '../../src/lib/common-passwords.js'
import { generateEmailLinkToken, isEmailLinkToken } from '../../src/lib/tokens.js'
import { describeUserAgent } from '../../src/lib/user-agent.js'

describe('common passwords', () => {
  it.each(['password', '12345678', 'Password1', 'QWERTYUIOP', 'iloveyou'])('refuses %s', (p) => expect(isCommonPassword(p)).toBe(true))
  it.each(['correct horse battery', 'a brand new passphrase', 'Tr0ub4dor&3 but longer'])('accepts %s', (p) =>
    expect(isCommonPassword(p)).toBe(false),
  )

  it('applies to chosen passwords, never to log-in', () => {
    expect(newPasswordField.safeParse('password1').success).toBe(false)
    expect(parseCredentials({ email: 'a@example.com', password: 'password1' }).ok).toBe(true)
    const signUp = parseCredentials({ email: 'a@example.com', password: 'password1' }, { newPassword: true })
    expect(signUp.ok).toBe(false)
    expect(!signUp.ok && signUp.errors.password).toContain('one of the most common passwords')
  })

  it('keeps the length rules: 8 to 256 characters, spaces and any script welcome', () => {
    expect(newPasswordField.safeParse('7 chars').success).toBe(false)
    expect(newPasswordField.safeParse('x'.repeat(257)).success).toBe(false)
    expect(newPasswordField.safeParse('пароль для входа').success).toBe(true)
  })
})

describe('mailed link tokens', () => {
  it('carry their purpose in a prefix and are recognised by shape before any lookup', () => {
    const token = generateEmailLinkToken('reset-password')
    expect(token).toMatch(/^gpr_[A-Za-z0-9_-]{43}$/)
    expect(isEmailLinkToken('reset-password', token)).toBe(true)
    expect(isEmailLinkToken('verify-email', token)).toBe(false)
    expect(isEmailLinkToken('reset-password', `${token}x`)).toBe(false)
    expect(isEmailLinkToken('reset-password', ['a'])).toBe(false)
  })
})

describe('mails', () => {
  it('escape what they quote in HTML, and carry the link in both parts', () => {
    const mail = verificationMail(
      { serviceName: '<Team & Co>', publicUrl: 'https://auth.example.com' },
      'a@example.com',
      'https://auth.example.com/verify-email?token=gev_x&y',
    )
    expect(mail.subject).toBe('Verify your email address · <Team & Co>')
    expect(mail.html).toContain('&lt;Team &amp; Co&gt;')
    expect(mail.html).not.toContain('<Team')
    expect(mail.html).toContain('href="https://auth.example.com/verify-email?token=gev_x&amp;y"')
    expect(mail.text).toContain('https://auth.example.com/verify-email?token=gev_x&y')
  })

  // SERVICE_NAME is configurable, so no article may sit before it ("a Acme Auth account").
  it('put no article before the service name', () => {
    const frame = { serviceName: 'Acme Auth', publicUrl: 'https://auth.example.com' }
    const mails = [
      verificationMail(frame, 'a@example.com', 'https://auth.example.com/verify-email?token=gev_x'),
      signUpAttemptMail(frame, 'a@example.com'),
      passwordResetNoAccountMail(frame, 'a@example.com'),
    ]
    expect(mails[0]!.text).toContain('created an account on Acme Auth with this address')
    for (const mail of mails) expect(mail.text).not.toMatch(/\ban? Acme Auth\b/)
  })
})

describe('describeUserAgent', () => {
  it.each([
    ['Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0', 'Firefox on Linux'],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
      'Chrome on Windows',
    ],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0',
      'Edge on Windows',
    ],
    [
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
      'Safari on macOS',
    ],
    [
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36',
      'Chrome on Android',
    ],
    ['curl/8.5.0', 'curl'],
    [null, 'Unknown browser'],
  ])('%s → %s', (ua, expected) => expect(describeUserAgent(ua)).toBe(expected))
})

import { Secret, TOTP } from 'otpauth'
import type { LightMyRequestResponse } from 'fastify'
import type { BrowserSession } from './browser-session.js'

/*
 * An authenticator app for tests: reads the secret the set-up page shows, and computes codes from
 * it at the app's clock (RFC 6238: SHA-1, 6 digits, 30 s, as src/accounts/second-factor/totp.ts).
 */

export const STEP_MS = 30_000

export function totpCode(secret: string, at: Date): string {
  return new TOTP({ algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(secret) }).generate({ timestamp: at.getTime() })
}

/** The secret of the set-up page, as typed: its groups joined. */
export function secretOnPage(body: string): string {
  const m = /<code class="secret">([A-Z2-7 ]+)<\/code>/.exec(body)
  if (!m) throw new Error(`no secret on the page: ${body.slice(0, 300)}`)
  return m[1]!.replace(/ /g, '')
}

export function recoveryCodesOnPage(body: string): string[] {
  return [...body.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map((m) => m[1]!)
}

/**
 * Sets up an authenticator app for the logged-in session and confirms it with the code of `at`
 * and the account's `password` (adding a factor asks for it); the secret and the recovery codes shown once.
 */
export async function enrolTotp(
  s: BrowserSession,
  at: () => Date,
  password = 'correct horse battery',
): Promise<{ secret: string; recoveryCodes: string[]; confirmed: LightMyRequestResponse }> {
  await s.get('/account/two-factor')
  const started = await s.post('/account/two-factor/totp', {})
  if (started.headers.location !== '/account/two-factor/totp')
    throw new Error(`set-up not started: ${started.statusCode} ${started.body.slice(0, 300)}`)
  const page = await s.get('/account/two-factor/totp')
  const secret = secretOnPage(page.body)
  const confirmed = await s.post('/account/two-factor/totp/confirm', { code: totpCode(secret, at()), password })
  if (confirmed.statusCode !== 200) throw new Error(`set-up not confirmed: ${confirmed.statusCode} ${confirmed.body.slice(0, 300)}`)
  return { secret, recoveryCodes: recoveryCodesOnPage(confirmed.body), confirmed }
}

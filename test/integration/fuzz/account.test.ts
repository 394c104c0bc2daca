import fc from 'fast-check'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { issueEmailLink } from '../../../src/accounts/sign-up/email-links.js'
import { beginPendingLogIn } from '../../../src/accounts/second-factor/pending-login.js'
import { newRecoveryCodes, recoveryCodeHash } from '../../../src/accounts/second-factor/recovery-codes.js'
import { newTotpSecret } from '../../../src/accounts/second-factor/totp.js'
import { createSealedBox } from '../../../src/lib/sealed-box.js'
import { TEST_SECRET_KEY } from '../../helpers/app.js'
import { totpCode } from '../../helpers/totp.js'
import type { EmailTokenPurpose } from '../../../src/db/schema.js'
import { type Harness, browserRequest, createHarness, live, liveOneOf, requests } from './harness.js'
import { pathOf, text } from './wire.js'

/*
 * Property-based fuzz of the account pages (docs/accounts.md "Your account"): forgot/reset password, the mailed links'
 * pages (verify email, reset password, confirm email, cancel an email change) with real, used, malformed and foreign
 * tokens, and the Account pages with their forms, logged out and logged in with a valid CSRF
 * token. The properties are those of every page (harness.ts): no 5xx, nothing logged at error
 * level, no unhandled rejection, errors as HTML pages.
 */

const TIMEOUT = 180_000
let h: Harness
const links: Record<EmailTokenPurpose, string[]> = {
  'verify-email': [],
  'reset-password': [],
  'change-email': [],
  'cancel-email-change': [],
}

/**
 * Four live links of the purpose. Issued just before its page is fuzzed: a reset (or a change of
 * address) voids every pending link of the account (src/accounts/recovery/recovery.ts).
 */
async function issueLinks(purpose: EmailTokenPurpose): Promise<void> {
  const { t, user } = h.world
  // The address the account has now: a confirmed change (/confirm-email) moved it.
  const current = (await t.db.selectFrom('users').select('email').where('id', '=', user.id).executeTakeFirstOrThrow()).email
  for (let i = 0; i < 4; i++) {
    const email = purpose === 'change-email' ? `moved-${i}@example.com` : current
    const link = await issueEmailLink(t.db, t.config.publicUrl, { purpose, userId: user.id, email, now: t.clock() })
    links[purpose].push(new URL(link).searchParams.get('token')!)
  }
}

beforeAll(async () => {
  h = await createHarness()
  for (const purpose of Object.keys(links) as EmailTokenPurpose[]) await issueLinks(purpose)
})
afterAll(async () => {
  await h?.close()
})

/** A link's token: a real one of this purpose (some get used), one of another purpose, or junk. */
const token = (purpose: EmailTokenPurpose) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.nat().map((i) => links[purpose][i % links[purpose].length]!) },
    { weight: 1, arbitrary: fc.constantFrom(...Object.values(links).flat()) },
    { weight: 1, arbitrary: fc.constantFrom('', 'gev_', `gpr_${'A'.repeat(43)}`, `gce_${'-'.repeat(43)}`, 'gev_%00', 'x'.repeat(120)) },
    { weight: 1, arbitrary: text(60) },
  )

const password = () =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('a new passphrase', 'another long passphrase') },
    fc.constantFrom('password', 'iloveyou', 'short', 'x'.repeat(257), ''),
    text(),
  )

const email = () =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant(h.world.user.email) },
    fc.constantFrom('someone@example.com', 'FUZZ@EXAMPLE.COM', 'not-an-email', `${'a'.repeat(250)}@example.com`),
    text(),
  )

it(
  'the mailed links: /verify-email, /reset-password, /confirm-email, /cancel-email-change',
  async () => {
    for (const [path, purpose] of [
      ['/verify-email', 'verify-email'],
      ['/reset-password', 'reset-password'],
      ['/confirm-email', 'change-email'],
      ['/cancel-email-change', 'cancel-email-change'],
    ] as const) {
      await issueLinks(purpose)
      // A link just mailed, opened and then answered: the page that asks, and the link used.
      const fresh = links[purpose].at(-1)!
      await h.fuzz(
        path,
        requests(h.world, {
          methods: ['GET', 'POST'],
          path: pathOf(path),
          query: { token: token(purpose) },
          body: { token: token(purpose), password: password(), revoke_access: fc.constantFrom('1', '', 'on') },
          form: true,
        }),
        120,
        [
          browserRequest(h.world, 'GET', path, { token: fresh }),
          browserRequest(h.world, 'POST', path, { token: fresh, password: 'a new passphrase' }),
        ],
      )
      // Pages that asked, links refused, forms refused; and links that were used.
      expect(h.outcomes(`GET ${path}`)).toEqual(expect.arrayContaining(['200', '400']))
      expect(h.outcomes(`POST ${path}`)).toEqual(expect.arrayContaining(['400', '403']))
      // A cancellation answers with a page; the others send the browser on.
      if (path === '/cancel-email-change') expect(h.outcomes(`POST ${path}`)).toContain('200')
      else expect(h.outcomes(`POST ${path}`).some((o) => o.startsWith('303 /'))).toBe(true)
    }
  },
  TIMEOUT,
)

it(
  '/forgot-password',
  async () => {
    await h.fuzz(
      '/forgot-password',
      requests(h.world, {
        methods: ['GET', 'POST'],
        path: pathOf('/forgot-password'),
        query: { email: email() },
        body: { email: email() },
        form: true,
      }),
      150,
    )
    expect(h.outcomes('POST /forgot-password')).toEqual(expect.arrayContaining(['200', '400', '403']))
  },
  TIMEOUT,
)

it(
  'the Account pages and their forms',
  async () => {
    const path = fc.constantFrom(
      '/account',
      '/account/password',
      '/account/email',
      '/account/sessions',
      '/account/sessions/others',
      '/account/delete',
      '/account/verification-email',
    )
    await h.fuzz(
      'account',
      requests(h.world, {
        methods: ['GET', 'POST'],
        path: path.chain(pathOf),
        query: {
          password_changed: fc.constant('1'),
          email_changed: fc.constant('1'),
          verification: fc.constantFrom('sent', 'not-sent', 'limited', 'already-verified', '<b>'),
        },
        body: {
          current_password: fc.oneof({ weight: 2, arbitrary: fc.constant(h.world.user.password) }, text(), fc.constant('x'.repeat(300))),
          new_password: password(),
          new_email: email(),
          // Never the real password: a deleted account would leave the harness without its user.
          password: fc.oneof(text(), fc.constantFrom('', 'not the password', 'x'.repeat(300))),
          from: fc.constantFrom('account', 'applications', ''),
        },
        form: true,
      }),
      500,
    )
    expect(h.outcomes('POST account')).toEqual(expect.arrayContaining(['400', '403']))
    expect(h.outcomes('POST account').some((o) => o.startsWith('303 /account'))).toBe(true)
    expect(h.outcomes('GET account')).toEqual(expect.arrayContaining(['200']))
  },
  TIMEOUT,
)

it(
  'the passkey page, its forms, and the passkey endpoints',
  async () => {
    const path = fc.constantFrom(
      '/account/passkeys',
      '/account/passkeys/rename',
      '/account/passkeys/remove',
      '/account/passkeys/registration-options',
      '/account/passkeys/registration',
      '/login/passkey/options',
      '/login/passkey',
    )
    const base64url = fc.string({ unit: fc.constantFrom(...'AZaz09-_'), maxLength: 80 })
    await h.fuzz(
      'passkeys',
      requests(h.world, {
        methods: ['GET', 'POST'],
        path: path.chain(pathOf),
        query: { added: fc.constant('1'), renamed: fc.constant('1'), removed: fc.constant('1') },
        body: {
          id: fc.oneof(base64url, text(), fc.constant('x'.repeat(2000))),
          name: fc.oneof(text(), fc.constantFrom('', ' ', 'x'.repeat(65), 'My key')),
          // Never the real password: removing a passkey is fine, but keep the other outcomes reachable.
          password: fc.oneof(text(), fc.constantFrom('', 'not the password')),
          response: fc.oneof(text(), base64url),
          next: fc.constantFrom('/applications', '//evil.example', 'https://evil.example/', ''),
        },
        form: true,
      }),
      300,
    )
    expect(h.outcomes('POST passkeys')).toEqual(expect.arrayContaining(['400', '403']))
    expect(h.outcomes('GET passkeys')).toEqual(expect.arrayContaining(['200']))
  },
  TIMEOUT,
)

/** What a TOTP or recovery code field receives: codes of the right shapes, and anything else. */
const code = () =>
  fc.oneof(
    { weight: 2, arbitrary: fc.stringMatching(/^\d{6}$/) },
    { weight: 1, arbitrary: fc.constantFrom('', ' 123 456 ', 'abcde-fghjk', 'ABCDE FGHJK', '0'.repeat(65), 'x'.repeat(300)) },
    text(),
  )

it(
  'Two-factor authentication: the Account page, the authenticator app set-up, recovery codes, the log-in step',
  async () => {
    const path = fc.constantFrom(
      '/account/two-factor',
      '/account/two-factor/totp',
      '/account/two-factor/totp/confirm',
      '/account/two-factor/totp/off',
      '/account/two-factor/recovery-codes',
      '/login/second-factor',
    )
    await h.fuzz(
      'two-factor',
      requests(h.world, {
        methods: ['GET', 'POST'],
        path: path.chain(pathOf),
        query: { totp_off: fc.constant('1'), enrolment_expired: fc.constant('1'), next: fc.constantFrom('/account', '//evil.example', '') },
        body: {
          code: code(),
          // Never the real password with a real code: the world's user keeps its state.
          password: fc.oneof(fc.constant(h.world.user.password), text(), fc.constantFrom('', 'x'.repeat(300))),
          next: fc.constantFrom('/account', '//evil.example', ''),
        },
        form: true,
      }),
      300,
    )
    expect(h.outcomes('GET two-factor')).toEqual(expect.arrayContaining(['200', '303 /login']))
    expect(h.outcomes('POST two-factor')).toEqual(expect.arrayContaining(['400', '403']))
    expect(h.outcomes('POST two-factor').some((o) => o.startsWith('303 /account/two-factor'))).toBe(true)
  },
  TIMEOUT,
)

/**
 * Gives the world's user an authenticator app and recovery codes, as a confirmed set-up leaves
 * them, and pending log-ins to finish. Last in this file: from here on its log-ins ask for a code.
 */
async function secondFactorWorld() {
  const { t, user } = h.world
  const secret = newTotpSecret()
  const recoveryCodes = newRecoveryCodes()
  await t.db
    .insertInto('totp_secrets')
    .values({ user_id: user.id, secret_sealed: createSealedBox(TEST_SECRET_KEY).seal(secret), last_step: 0, created_at: t.clock() })
    .execute()
  await t.db.updateTable('users').set({ second_factor: true }).where('id', '=', user.id).execute()
  await t.db
    .insertInto('recovery_codes')
    .values(recoveryCodes.map((c) => ({ user_id: user.id, code_hash: recoveryCodeHash(c)!, created_at: t.clock() })))
    .execute()
  const pendingIds: string[] = []
  for (let i = 0; i < 40; i++) pendingIds.push(await beginPendingLogIn(t.db, t.clock, user.id))
  return { secret, recoveryCodes, pendingIds }
}

it(
  "the log-in's second step with live pending log-ins",
  async () => {
    const { secret, recoveryCodes, pendingIds } = await secondFactorWorld()
    const pending = fc.oneof(
      { weight: 4, arbitrary: liveOneOf(() => pendingIds).map((id) => `gatehouse_pending_login=${id}`) },
      { weight: 1, arbitrary: text(40).map((v) => `gatehouse_pending_login=${v.replace(/[;\s]/g, '')}`) },
    )
    await h.fuzz(
      'second step',
      requests(h.world, {
        methods: ['GET', 'POST'],
        path: fc.constantFrom('/login/second-factor', '/login/second-factor/passkey/options', '/login/second-factor/passkey').chain(pathOf),
        query: { next: fc.constantFrom('/account', '//evil.example', '') },
        body: {
          code: fc.oneof(
            { weight: 2, arbitrary: fc.constantFrom(...recoveryCodes) },
            { weight: 2, arbitrary: live(() => totpCode(secret, h.world.t.clock())) },
            { weight: 2, arbitrary: code() },
          ),
          // The passkey step's assertion: the world's user has no passkey, so none verifies.
          response: fc.oneof(text(), fc.constantFrom('{}', '{"id":"x","type":"public-key"}')),
          next: fc.constantFrom('/account', '//evil.example', ''),
        },
        form: true,
        cookies: pending,
      }),
      300,
      // A pending log-in finished with a recovery code.
      [
        browserRequest(
          h.world,
          'POST',
          '/login/second-factor',
          { code: recoveryCodes[0]!, next: '/account' },
          { cookie: `gatehouse_pending_login=${pendingIds[0]!}` },
        ),
      ],
    )
    expect(h.outcomes('POST second step')).toEqual(expect.arrayContaining(['401', '403', '303 /login']))
    expect(h.outcomes('POST second step').some((o) => o === '303 /applications' || o === '303 /account')).toBe(true)
  },
  TIMEOUT,
)

// Last in the file: every route of this suite (harness.ts suiteOf) has been reached by the fuzz above.
it('reached every route that falls to this suite', () => {
  expect(h.unreached('account')).toEqual([])
})

import type { LightMyRequestResponse } from 'fastify'
import type { OperatorContext } from '../../../src/operator/moderation.js'
import type { TestContext } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { until } from '../../helpers/oauth-load.js'
import { basicAuth } from '../../helpers/factories.js'
import { NOTICE_WAIT_MS } from '../../helpers/propagation.js'

/*
 * What the operator tests share: the moderation functions called as the command line and the
 * admin pages call them, with this test app's database and bus (so its caches hear the
 * revocations as they would hear their own) and no audit log.
 */

export function operator(t: TestContext): OperatorContext {
  return { db: t.db, bus: t.deps.bus, record: async () => {} }
}

export const INACTIVE = '{"active":false}'

export interface Credentials {
  clientId: string
  clientSecret: string
}

/** POST /oauth/introspect with HTTP Basic credentials. */
export function introspect(t: Pick<TestContext, 'app'>, caller: Credentials, token: string): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url: '/oauth/introspect',
    headers: { authorization: basicAuth(caller.clientId, caller.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token }).toString(),
  })
}

/** Whether `caller` is told the token is active (a 200 either way). */
export async function isActive(t: Pick<TestContext, 'app'>, caller: Credentials, token: string): Promise<boolean> {
  const res = await introspect(t, caller, token)
  if (res.statusCode !== 200) throw new Error(`introspection answered ${res.statusCode}: ${res.body}`)
  return res.json<{ active: boolean }>().active
}

/**
 * Waits until `caller` is told the token is inactive: until the revocation notice reached that
 * instance. NOTICE_WAIT_MS is a safety net, not a latency bound (test/helpers/propagation.ts).
 */
export function inactiveOnceNoticed(t: Pick<TestContext, 'app'>, caller: Credentials, token: string): Promise<number> {
  return until(async () => !(await isActive(t, caller, token)), NOTICE_WAIT_MS, `token ${token.slice(0, 12)}… inactive`)
}

export async function userIdOf(t: TestContext, email: string): Promise<string> {
  const row = await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()
  return row.id
}

/** The same browser (its cookies) talking to another app instance on the same database. */
export function sameBrowserOn(other: TestContext, s: BrowserSession): BrowserSession {
  const copy = new BrowserSession(other.app, s.remoteAddress)
  for (const [k, v] of s.cookies) copy.cookies.set(k, v)
  return copy
}

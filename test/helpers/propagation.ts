import { median } from '../../bench/stats.js'
import type { DatabaseHandle } from '../../src/db/connect.js'
import type { Verifier } from '@gatehouse/verifier'
import { REVOCATION_CHANNEL } from '@gatehouse/verifier/shared'
import { type AccessTokenFixture, type ApplicationFixture, basicAuth, createApplication, createUser } from './factories.js'

/** Revokes through POST /oauth/revoke (RFC 7009) of the given Gatehouse, as the token's client. */
export async function revokeThrough(baseUrl: string, application: ApplicationFixture, token: AccessTokenFixture): Promise<void> {
  const res = await fetch(`${baseUrl}/oauth/revoke`, {
    method: 'POST',
    headers: {
      authorization: basicAuth(application.clientId, application.clientSecret),
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: `token=${token.token}`,
  })
  if (res.status !== 200) throw new Error(`POST /oauth/revoke answered ${res.status}: ${await res.text()}`)
}

/**
 * How long a test waits for a revocation notice to reach a cache before it fails: a safety net,
 * not the assertion. What a test asserts is the event: the cache drops the token once the notice
 * arrives, which takes milliseconds (docs/resource-apis.md "Revocation propagation, measured"), while without a
 * notice a cache keeps the token for its TTL (a minute by default, for ever under a test's manual
 * clock), so the wait still fails. The one-second target of
 * docs/decisions/003-revocation-propagation.md is a figure `npm run bench:propagation` measures;
 * as a pass/fail bound here it would let a busy machine fail the suite. Below vitest's 30 s
 * testTimeout, so a missing notice fails with a message naming what never happened.
 */
export const NOTICE_WAIT_MS = 20_000

/**
 * Milliseconds until `check` holds, polling every `intervalMs` or, by default, as fast as the
 * event loop allows (each round yields to I/O, so notifications are processed in between);
 * throws after `timeoutMs`.
 */
export async function msUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  since = performance.now(),
  intervalMs = 0,
): Promise<number> {
  for (;;) {
    if (await check()) return performance.now() - since
    if (performance.now() - since > timeoutMs) throw new Error(`not within ${timeoutMs} ms`)
    await new Promise((resolve) => (intervalMs > 0 ? setTimeout(resolve, intervalMs) : setImmediate(resolve)))
  }
}

/**
 * Listens on the revocation channel through `database` and resolves `heard` once a notice naming
 * `digest` arrives: the event itself, for a test that must know a notice was delivered before
 * asserting what a cache did (or, cut off from it, did not do) meanwhile.
 */
export async function awaitNotice(
  database: Pick<DatabaseHandle, 'listen'>,
  digest: string,
): Promise<{ heard: Promise<void>; stop: () => Promise<void> }> {
  let hear!: () => void
  const heard = new Promise<void>((resolve) => (hear = resolve))
  const stop = await database.listen(REVOCATION_CHANNEL, (payload) => {
    if (payload.split(',').includes(digest)) hear()
  })
  return { heard, stop }
}

export function summarize(samples: readonly number[]): { n: number; median: number; worst: number } {
  return { n: samples.length, median: median(samples), worst: Math.max(...samples) }
}

/** Whether `base`'s introspection calls the token active. */
export const isActive = async (base: string, client: ApplicationFixture, token: string): Promise<boolean> => {
  const res = await fetch(`${base}/oauth/introspect`, {
    method: 'POST',
    headers: { authorization: basicAuth(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${token}`,
  })
  return ((await res.json()) as { active: boolean }).active
}
export const tokenInfoStatus = async (base: string, token: string): Promise<number> =>
  (await fetch(`${base}/oauth/token/info`, { headers: { authorization: `Bearer ${token}` } })).status
/** The verifier no longer holds the token as valid: a dropped entry means the next check asks afresh. */
export const refuses = (v: Verifier, token: string) => () => v.verifyCached(`Bearer ${token}`)?.ok !== true

/** A user, their application, and a second application acting as the resource server. */
export async function seed(db: DatabaseHandle['db']) {
  const user = await createUser(db)
  const application = await createApplication(db, { ownerId: user.id })
  const resourceServer = await createApplication(db, { name: 'Resource server', resourceServer: true })
  return { user, application, resourceServer }
}

import { median } from '../../bench/stats.js'
import type { DatabaseHandle } from '../../src/db/connect.js'
import type { Verifier } from '@gatehouse/verifier'
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

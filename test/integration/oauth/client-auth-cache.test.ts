import type { CompiledQuery } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { regenerateSecret } from '../../../src/applications/applications.js'
import { manualClock } from '../../../src/lib/clock.js'
import { ClientAuthCache } from '../../../src/oauth/token/client-auth-cache.js'
import { InvalidClientError } from '../../../src/oauth/errors.js'
import { RevocationBus } from '../../../src/revocation/bus.js'
import { type TestDatabase, createTestDatabase } from '../../helpers/db.js'
import { createApplication } from '../../helpers/factories.js'

/*
 * ClientAuthCache (src/oauth/token/client-auth-cache.ts) against a real database, its lookups
 * observed where they hand back their connection: a lookup that read the old secret while a regeneration
 * committed and was announced must not store that secret, or the old secret would keep
 * authenticating at the resource-server endpoints until the TTL ran out.
 */

let testDb: TestDatabase
beforeAll(async () => {
  testDb = await createTestDatabase()
})
afterAll(async () => {
  await testDb.destroy()
})

it('does not store a lookup that a revocation notice overtook, and stores the next one', async () => {
  const db = testDb.handle.db
  const clock = manualClock(new Date())
  const bus = new RevocationBus(testDb.handle, { warn: () => {}, info: () => {} })
  const application = await createApplication(db, { resourceServer: true })

  let lookups = 0
  /** Runs once, after the next lookup has read its row and given back the connection (PGlite has one), before the cache sees the row. */
  let betweenReadAndStore: (() => Promise<void>) | undefined
  // This handle's own executor (withPlugin copies it), wrapped where a query's result is in: its
  // connection is back by then, whether Kysely's path or the statement executor ran it.
  const observed = db.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => args.result })
  const executor = observed.getExecutor()
  const executeQuery = executor.executeQuery.bind(executor)
  executor.executeQuery = async <R>(compiled: CompiledQuery) => {
    const result = await executeQuery<R>(compiled)
    lookups++
    const step = betweenReadAndStore
    betweenReadAndStore = undefined
    await step?.()
    return result
  }
  const cache = new ClientAuthCache({ db: observed, clock, ttlMs: 60_000, maxEntries: 100, failureLimit: 1000 })
  bus.subscribe(cache)
  const withSecret = (clientSecret: string) => cache.authenticate({ clientId: application.clientId, clientSecret, usedBasic: true })

  let newSecret = ''
  betweenReadAndStore = async () => {
    const regenerated = await regenerateSecret(db, bus, application.id, application.ownerId, clock(), { record: async () => {} })
    newSecret = regenerated!.clientSecret
  }
  // The lookup read the old digest before the regeneration: this request, already under way, passes.
  await expect(withSecret(application.clientSecret)).resolves.toMatchObject({ applicationId: application.id })
  expect(newSecret).not.toBe('')

  // Had the overtaken read been stored, the old secret would be served from the cache here.
  await expect(withSecret(application.clientSecret)).rejects.toBeInstanceOf(InvalidClientError)
  await expect(withSecret(newSecret)).resolves.toMatchObject({ applicationId: application.id })
  // A lookup that nothing overtook is stored: the next authentication reads nothing.
  const before = lookups
  await expect(withSecret(newSecret)).resolves.toMatchObject({ applicationId: application.id })
  expect(lookups).toBe(before)
})

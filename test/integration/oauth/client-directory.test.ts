import { afterAll, beforeAll, expect, it } from 'vitest'
import { manualClock } from '../../../src/lib/clock.js'
import { ApplicationCache } from '../../../src/oauth/clients/application-cache.js'
import { ClientDirectory } from '../../../src/oauth/clients/client-directory.js'
import { type TestDatabase, createTestDatabase } from '../../helpers/db.js'
import { createApplication } from '../../helpers/factories.js'
import { upsertMetadataClient } from '../../../src/repositories/metadata-clients.js'

/*
 * ClientDirectory (src/oauth/clients/client-directory.ts) against a real database: every fresh
 * read tells the ApplicationCache what it found, so GET /oauth/authorize's remembered-consent path
 * tries a copy only of an application that still existed at the last read
 * (docs/decisions/004-caching-and-ttl-bounds.md).
 */

let testDb: TestDatabase
beforeAll(async () => {
  testDb = await createTestDatabase()
})
afterAll(async () => {
  await testDb.destroy()
})

it('remembers the application it read, and forgets it when a later read finds none', async () => {
  const db = testDb.handle.db
  const cache = new ApplicationCache(db, manualClock(new Date()))
  const directory = new ClientDirectory(db, cache)
  const application = await createApplication(db)

  expect(cache.get(application.clientId)).toBeUndefined()
  const found = await directory.resolve(application.clientId)
  expect(found).toMatchObject({ id: application.id, client_id: application.clientId })
  expect(cache.get(application.clientId)).toEqual(found)

  // Gone without a notice on the bus: only the next read can tell the cache.
  await db.deleteFrom('applications').where('id', '=', application.id).execute()
  expect(cache.get(application.clientId)).toEqual(found)
  expect(await directory.resolve(application.clientId)).toBeUndefined()
  expect(cache.get(application.clientId)).toBeUndefined()
})

it('without CLIENT_ID_METADATA_DOCUMENTS never looks a URL up, even one whose client an earlier run stored', async () => {
  const db = testDb.handle.db
  const clock = manualClock(new Date())
  const cache = new ApplicationCache(db, clock)
  const directory = new ClientDirectory(db, cache)
  const url = 'https://client.example/oauth-client.json'
  const stored = await upsertMetadataClient(db, {
    clientId: url,
    name: 'client.example',
    redirectUris: ['https://client.example/callback'],
    homepageUrl: null,
    allowedScopes: ['read'],
    fetchedAt: clock(),
  })
  expect(stored?.client_id).toBe(url)

  // docs/decisions/026-client-metadata-documents.md "Off by default": unknown at /oauth/authorize too.
  expect(await directory.resolve(url)).toBeUndefined()
  expect(cache.get(url)).toBeUndefined()
})

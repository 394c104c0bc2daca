import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listenPg } from '@gatehouse/verifier/shared'
import { type TestDatabase, createTestDatabase } from '../helpers/db.js'
import { type TcpProxy, relayDatabase } from '../helpers/tcp-proxy.js'

/*
 * The dedicated LISTEN connection (src/db/listen.ts) against a real Postgres, through a relay
 * that can break it. PGlite runs in-process and has no connection to lose.
 */
describe('LISTEN connection (needs TEST_DATABASE_URL)', () => {
  let testDb: TestDatabase
  let proxy: TcpProxy
  let relayed: string

  beforeAll(async () => {
    testDb = await createTestDatabase()
    ;({ proxy, url: relayed } = await relayDatabase(testDb.url!))
  })
  afterAll(async () => {
    await proxy?.close()
    await testDb?.destroy()
  })

  async function subscribe(options = {}) {
    const received: string[] = []
    const states: string[] = []
    const stop = await listenPg(
      relayed,
      'listen_test',
      (p) => received.push(p),
      {
        onConnected: () => states.push('connected'),
        onDisconnected: () => states.push('disconnected'),
      },
      options,
    )
    const notify = (payload: string) => sql`select pg_notify('listen_test', ${payload})`.execute(testDb.handle.db)
    return { received, states, stop, notify }
  }

  it('reconnects after the connection is cut and keeps receiving', async () => {
    const s = await subscribe()
    try {
      await s.notify('one')
      await expect.poll(() => s.received).toEqual(['one'])
      proxy.cut()
      await expect.poll(() => s.states).toEqual(['connected', 'disconnected'])
      proxy.restore()
      await expect.poll(() => s.states).toEqual(['connected', 'disconnected', 'connected'])
      await s.notify('two')
      await expect.poll(() => s.received).toEqual(['one', 'two'])
    } finally {
      await s.stop()
    }
  })

  it('notices a connection that died without a word, by its heartbeat', async () => {
    const s = await subscribe({ heartbeatMs: 100, heartbeatTimeoutMs: 200 })
    try {
      proxy.freeze()
      await expect.poll(() => s.states).toEqual(['connected', 'disconnected', 'connected'])
      await s.notify('after')
      await expect.poll(() => s.received).toEqual(['after'])
    } finally {
      await s.stop()
    }
  })
})

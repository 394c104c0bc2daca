import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { lockUser, lockUserForChange } from '../../src/repositories/users.js'
import { createUser } from '../helpers/factories.js'
import { oauthTestFile } from '../helpers/oauth-set-up.js'

/*
 * A change of a user's own credentials (a factor added, a password reset, the operator's reset of
 * the second factor) holds the user's row and then revokes refresh-token families, which a
 * concurrent refresh holds while it inserts an access token whose foreign key takes the user's row
 * FOR KEY SHARE. The change's lock must let that through, or each waits for the other and
 * PostgreSQL aborts one as a deadlock (src/repositories/users.ts lockUserForChange). lockUser,
 * which a suspension holds so that codes wait for it, is the contrast. PGlite has one connection:
 * a server-only test.
 */
const { t } = oauthTestFile()

/** Whether a key-share lock on the user's row is granted, on another connection, while `lock` holds it. */
async function keyShareWhileHeld(lock: typeof lockUser, userId: string): Promise<boolean> {
  return t.db.transaction().execute(async (held) => {
    expect(await lock(held, userId)).toBeDefined()
    return t.db.transaction().execute(async (other) => {
      await sql`set local lock_timeout = '1s'`.execute(other)
      try {
        await other.selectFrom('users').select('id').where('id', '=', userId).forKeyShare().execute()
        return true
      } catch (err) {
        // 55P03 lock_not_available: lock_timeout ran out while the row was held.
        if ((err as { code?: string }).code === '55P03') return false
        throw err
      }
    })
  })
}

describe("the lock on a user's row", () => {
  it("for a change of credentials lets a foreign key through; the suspension's lockUser does not", async () => {
    const user = await createUser(t.db)
    expect(await keyShareWhileHeld(lockUserForChange, user.id)).toBe(true)
    expect(await keyShareWhileHeld(lockUser, user.id)).toBe(false)
  })
})

import { expect, it } from 'vitest'
import { COMMAND_LINE } from '../../../src/audit/actor.js'
import { OwnAccountError } from '../../../src/operator/use-cases.js'
import { createUser } from '../../helpers/factories.js'
import { testAppFile } from '../../helpers/file-set-up.js'

/*
 * services.operator.suspendUser, the use case the admin pages and `gatehouse users suspend` call
 * (what a suspension does to sessions, tokens and applications: suspend-user-across-instances.test.ts).
 */

const { t } = testAppFile()

const suspendedAt = async (id: string) =>
  (await t.db.selectFrom('users').select('suspended_at').where('id', '=', id).executeTakeFirstOrThrow()).suspended_at

it('refuses an operator acting on their own account, and changes nothing', async () => {
  const operator = await createUser(t.db)
  await expect(t.deps.operator.suspendUser({ userId: operator.id, address: '192.0.2.1' }, operator.id)).rejects.toBeInstanceOf(
    OwnAccountError,
  )
  expect(await suspendedAt(operator.id)).toBeNull()
})

it("suspends another account at the clock's time and records the acting operator and their address", async () => {
  const [operator, user] = [await createUser(t.db), await createUser(t.db)]
  expect(await t.deps.operator.suspendUser({ userId: operator.id, address: '192.0.2.7' }, user.id)).toEqual({ changed: true })
  expect(await suspendedAt(user.id)).toEqual(t.clock())
  const event = await t.db
    .selectFrom('audit_events')
    .select(['actor_id', 'client_address'])
    .where('event', '=', 'operator.user_suspended')
    .where('user_id', '=', user.id)
    .executeTakeFirstOrThrow()
  expect(event).toEqual({ actor_id: operator.id, client_address: '192.0.2.7' })
  expect(await t.deps.operator.suspendUser(COMMAND_LINE, user.id)).toEqual({ changed: false })
})

import { afterAll, beforeAll, expect, it } from 'vitest'
import { rememberProof } from '../../src/repositories/dpop-proofs.js'
import { type TestContext, buildTestApp } from '../helpers/app.js'

/* The replay cache of DPoP proofs (RFC 9449 §11.1), on both engines. */

let t: TestContext
beforeAll(async () => {
  t = await buildTestApp()
})
afterAll(() => t.close())

const at = (s: number) => new Date(1_800_000_000_000 + s * 1000)

it('accepts a proof once, refuses it again until it expires, and among concurrent tries exactly one', async () => {
  expect(await rememberProof(t.db, 'k1', at(60), at(0))).toBe(true)
  expect(await rememberProof(t.db, 'k1', at(61), at(30))).toBe(false)
  expect(await rememberProof(t.db, 'k1', at(200), at(60))).toBe(true)
  const tries = await Promise.all(Array.from({ length: 8 }, () => rememberProof(t.db, 'k2', at(60), at(0))))
  expect(tries.filter(Boolean)).toHaveLength(1)
})

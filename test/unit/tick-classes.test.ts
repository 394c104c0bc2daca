import { describe, expect, it } from 'vitest'
import { keepTickClasses } from '../../src/lib/tick-classes.js'

describe('keepTickClasses (src/lib/tick-classes.ts)', () => {
  it("keeps the tick's own object, as Node builds it: two symbol keys, then callback and args", async () => {
    const tick = await keepTickClasses()
    // The object whose hidden classes stay alive must be the one nextTick builds; if Node
    // changes what executionAsyncResource() answers inside a tick, the fix keeps nothing useful.
    expect(Object.keys(tick)).toEqual(expect.arrayContaining(['callback', 'args']))
    expect(Object.getOwnPropertySymbols(tick).map(String)).toEqual(expect.arrayContaining(['Symbol(async_id_symbol)']))
    expect(typeof (tick as { callback: unknown }).callback).toBe('function')
  })

  it('keeps one object for the life of the process, however often it is called', async () => {
    const first = await keepTickClasses()
    expect(await keepTickClasses()).toBe(first)
  })
})

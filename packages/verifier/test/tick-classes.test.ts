import { describe, expect, it, vi } from 'vitest'
import { keepTickClasses } from '../src/tick-classes.js'

describe('keepTickClasses (tick-classes.ts)', () => {
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

  it('is kept by createVerifier, so a resource API that builds its verifier at start-up has it', async () => {
    // Fresh instances of the modules: this process may have kept one already (unit tests share it).
    vi.resetModules()
    const ticks = await import('../src/tick-classes.js')
    const { createVerifier } = await import('../src/core.js')
    expect(ticks.keptTickObject()).toBeUndefined()
    const verifier = createVerifier({
      mode: 'introspection',
      introspectionUrl: 'http://127.0.0.1:9/oauth/introspect',
      clientId: 'rs',
      clientSecret: 's',
    })
    await new Promise((resolve) => setImmediate(resolve))
    expect(ticks.keptTickObject()).toBeDefined()
    await verifier.close()
  })
})

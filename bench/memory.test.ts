import { Registry, collectDefaultMetrics } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { parseMemory, sampleOf } from './memory.js'

describe('the memory breakdown read from /metrics', () => {
  it("reads prom-client's own exposition: resident memory, the V8 heap by space, external memory", async () => {
    const registry = new Registry()
    collectDefaultMetrics({ register: registry })
    const m = parseMemory(await registry.metrics())
    expect(m).not.toBeNull()
    expect(m!.rss).toBeGreaterThan(m!.heapUsed)
    expect(m!.heapTotal).toBeGreaterThanOrEqual(m!.heapUsed)
    expect(Object.keys(m!.heapSpaces)).toEqual(expect.arrayContaining(['new', 'old', 'code']))
    const spaces = Object.values(m!.heapSpaces).reduce((a, b) => a + b, 0)
    // Read in two calls, so a collection in between may move them apart a little.
    expect(Math.abs(spaces - m!.heapTotal)).toBeLessThan(m!.heapTotal / 10)
  })

  it('takes the sample with the labels asked for, and nothing from a longer name', () => {
    const text = ['a_total 1', 'a{space="new"} 2', 'a 3 1700000000000', 'ab 4'].join('\n')
    expect(sampleOf(text, 'a')).toBe(3)
    expect(sampleOf(text, 'a', 'space="new"')).toBe(2)
    expect(sampleOf(text, 'b')).toBeNull()
    expect(parseMemory(text)).toBeNull()
  })
})

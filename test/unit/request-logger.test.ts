import { Writable } from 'node:stream'
import type { FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { lazyChildLogger } from '../../src/http/logging.js'
import { pinoOptions } from '../../src/lib/log-options.js'

/** The process's logger as Gatehouse builds it, writing into `lines`, and how many children it made. */
function logger(level: string) {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>)
      done()
    },
  })
  const made = { children: 0 }
  // Counts the children made of the process's logger; theirs are pino's own.
  const parent = new Proxy(pino(pinoOptions(level), stream), {
    get(target, name) {
      if (name !== 'child') return Reflect.get(target, name) as unknown
      return (...args: Parameters<typeof target.child>) => {
        made.children++
        return target.child(...args)
      }
    },
  })
  const requestLog = (options = {}) =>
    lazyChildLogger.call(undefined as never, parent as unknown as FastifyBaseLogger, { reqId: 'req-1' }, options, undefined as never)
  return { lines, made, requestLog, parent }
}

describe('the lazy request logger (src/http/logging.ts)', () => {
  it('makes no child and writes nothing for lines its level drops', () => {
    const { lines, made, requestLog } = logger('warn')
    const log = requestLog()
    log.info({ req: { url: '/oauth/token/info' } }, 'incoming request')
    log.debug('detail')
    log.trace('more detail')
    expect(lines).toEqual([])
    expect(made.children).toBe(0)
    expect(log.level).toBe('warn')
  })

  it("writes a line its level lets through with the request's bindings, through one child", () => {
    const { lines, made, requestLog } = logger('warn')
    const log = requestLog()
    log.warn({ reason: 'cross-origin' }, 'cross-origin request refused')
    log.error({ err: new Error('boom') }, 'OAuth endpoint failed')
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([
      ['req-1', 'cross-origin request refused'],
      ['req-1', 'OAuth endpoint failed'],
    ])
    expect(made.children).toBe(1)
  })

  it('redacts as the parent does once the child is made (src/lib/log-options.ts)', () => {
    const { lines, requestLog } = logger('info')
    requestLog().info({ body: { client_secret: 's3cret-value', password: 'hunter2-value' } }, 'token request')
    expect(lines).toHaveLength(1)
    expect(JSON.stringify(lines)).not.toContain('s3cret-value')
    expect(JSON.stringify(lines)).not.toContain('hunter2-value')
    expect(lines[0]!.reqId).toBe('req-1')
  })

  it("gives grandchildren the request's bindings, and takes a level set on it", () => {
    const { lines, requestLog } = logger('warn')
    const log = requestLog()
    log.level = 'info'
    log.info('now written')
    log.child({ part: 'mail' }).warn('from a grandchild')
    expect(lines.map((l) => [l.reqId, l.part, l.msg])).toEqual([
      ['req-1', undefined, 'now written'],
      ['req-1', 'mail', 'from a grandchild'],
    ])
  })

  it('makes the child at once when a route sets a level of its own', () => {
    const { lines, made, requestLog } = logger('warn')
    const log = requestLog({ level: 'debug' })
    expect(made.children).toBe(1)
    log.debug('route detail')
    expect(lines.map((l) => l.msg)).toEqual(['route detail'])
  })
})

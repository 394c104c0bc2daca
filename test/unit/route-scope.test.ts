import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { routeScope } from '../../src/http/routes/plugin-contexts.js'

/*
 * A route scope (src/http/routes/plugin-contexts.ts) gives a group of routes what a plugin
 * context of their own would: its preHandler hooks before each route's own, its error handler
 * unless a route has one, passing on what it throws to the context's. Without the context's
 * Request and Reply classes.
 */
describe('routeScope', () => {
  let app: FastifyInstance
  const order: string[] = []
  const mark = (name: string) => async (_request: FastifyRequest, _reply: FastifyReply) => {
    order.push(name)
  }
  beforeEach(() => {
    order.length = 0
    app = Fastify()
    app.setErrorHandler(async (error: FastifyError, _request, reply) => reply.code(500).send({ from: 'context', message: error.message }))
    app.addHook('preHandler', mark('context'))
  })
  afterEach(async () => {
    await app.close()
  })

  it('runs the scope’s preHandler hooks after the context’s and before the route’s own, on every way of adding a route', async () => {
    const scoped = routeScope(app, { preHandler: [mark('scope 1'), mark('scope 2')] })
    scoped.get('/bare', async () => 'ok')
    scoped.post('/own', { preHandler: mark('own') }, async () => 'ok')
    scoped.route({ method: 'PUT', url: '/route', preHandler: [mark('own')], handler: async () => 'ok' })
    app.get('/outside', async () => 'ok')
    const seen = async (method: 'GET' | 'POST' | 'PUT', url: string) => {
      order.length = 0
      expect((await app.inject({ method, url })).statusCode).toBe(200)
      return [...order]
    }
    expect(await seen('GET', '/bare')).toEqual(['context', 'scope 1', 'scope 2'])
    expect(await seen('POST', '/own')).toEqual(['context', 'scope 1', 'scope 2', 'own'])
    expect(await seen('PUT', '/route')).toEqual(['context', 'scope 1', 'scope 2', 'own'])
    expect(await seen('GET', '/outside')).toEqual(['context'])
  })

  it('answers a route’s errors with the scope’s handler unless the route has its own, and passes on what it throws', async () => {
    const scoped = routeScope(app, {
      errorHandler: async (error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
        if (error.message === 'not mine') throw error
        return reply.code(400).send({ from: 'scope' })
      },
    })
    scoped.get('/fails', async () => {
      throw new Error('bad')
    })
    scoped.get('/passes-on', async () => {
      throw new Error('not mine')
    })
    scoped.get('/own', { errorHandler: async (_error, _request, reply) => reply.code(409).send({ from: 'own' }) }, async () => {
      throw new Error('bad')
    })
    app.get('/outside', async () => {
      throw new Error('bad')
    })
    expect((await app.inject('/fails')).json()).toEqual({ from: 'scope' })
    expect((await app.inject('/passes-on')).json()).toEqual({ from: 'context', message: 'not mine' })
    expect((await app.inject('/own')).json()).toEqual({ from: 'own' })
    expect((await app.inject('/outside')).json()).toEqual({ from: 'context', message: 'bad' })
  })

  it('refuses what would change the context beyond its routes', () => {
    const scoped = routeScope(app, { preHandler: [mark('scope')] })
    expect(() => scoped.addHook('onRequest', async () => {})).toThrow(/beyond its routes/)
    expect(() => scoped.setErrorHandler(async () => {})).toThrow(/beyond its routes/)
    expect(() => scoped.register(async () => {})).toThrow(/beyond its routes/)
  })

  it('adds its routes to the context it was made from: one Reply class', async () => {
    const classes = new Set<object>()
    const record = async (_request: FastifyRequest, reply: FastifyReply) => {
      classes.add(Object.getPrototypeOf(reply) as object)
      return 'ok'
    }
    routeScope(app, { preHandler: [mark('scope')] }).get('/scoped', record)
    app.get('/plain', record)
    await app.inject('/scoped')
    await app.inject('/plain')
    expect(classes.size).toBe(1)
  })
})

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'

/** The one stylesheet, read once: pages stay plain HTML and CSP can forbid inline styles. */
export default async function staticRoutes(app: FastifyInstance, { viewsDir }: { viewsDir: string }) {
  const css = readFileSync(join(viewsDir, 'static', 'app.css'))
  app.get('/static/app.css', async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(css),
  )
}

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'

/**
 * The one stylesheet, the icon every page names, and the passkey pages' two scripts, read once: pages stay plain HTML and CSP
 * can forbid inline styles and scripts. `webauthnBrowserScript` is the browser build of
 * @simplewebauthn/browser from node_modules (src/app.ts finds it), served from Gatehouse itself:
 * no third party is asked for code that handles the sign-in (docs/decisions/011-second-factor.md).
 */
export default async function staticRoutes(
  app: FastifyInstance,
  { viewsDir, webauthnBrowserScript }: { viewsDir: string; webauthnBrowserScript: string },
) {
  const css = readFileSync(join(viewsDir, 'static', 'app.css'))
  app.get('/static/app.css', async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(css),
  )
  const icon = readFileSync(join(viewsDir, 'static', 'favicon.svg'))
  app.get('/static/favicon.svg', async (_request, reply) =>
    reply.type('image/svg+xml').header('x-content-type-options', 'nosniff').header('cache-control', 'public, max-age=86400').send(icon),
  )
  const scripts: Record<string, Buffer> = {
    '/static/webauthn-browser.js': readFileSync(webauthnBrowserScript),
    '/static/passkeys.js': readFileSync(join(viewsDir, 'static', 'passkeys.js')),
  }
  for (const [path, body] of Object.entries(scripts)) {
    app.get(path, async (_request, reply) =>
      reply
        .type('text/javascript; charset=utf-8')
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'public, max-age=3600')
        .send(body),
    )
  }
}

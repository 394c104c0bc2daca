import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { type Brand, LOGO_PATH } from '../../lib/brand.js'

/**
 * The one stylesheet, the icon every page names, and the passkey pages' two scripts, read once: pages stay plain HTML and CSP
 * can forbid inline styles and scripts. `webauthnBrowserScript` is the browser build of
 * @simplewebauthn/browser from node_modules (src/app.ts finds it), served from Gatehouse itself:
 * no third party is asked for code that handles the sign-in (docs/decisions/011-second-factor.md).
 */
export default async function staticRoutes(
  app: FastifyInstance,
  { viewsDir, webauthnBrowserScript, brand }: { viewsDir: string; webauthnBrowserScript: string; brand: Brand },
) {
  // The accent colour, checked at start-up (src/lib/brand.ts), overrides the stylesheet's default
  // as its last rule: no inline style, so CSP keeps `style-src 'self'`.
  const css = Buffer.concat([
    readFileSync(join(viewsDir, 'static', 'app.css')),
    Buffer.from(`\n:root { --accent: ${brand.accentColor}; }\n`),
  ])
  app.get('/static/app.css', async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(css),
  )
  const icon = readFileSync(join(viewsDir, 'static', 'favicon.svg'))
  app.get('/static/favicon.svg', async (_request, reply) =>
    reply.type('image/svg+xml').header('x-content-type-options', 'nosniff').header('cache-control', 'public, max-age=86400').send(icon),
  )
  if (brand.logo !== undefined) logoRoute(app, brand.logo)
  const scripts: Record<string, Buffer> = {
    '/static/webauthn-browser.js': readFileSync(webauthnBrowserScript),
    '/static/passkeys.js': readFileSync(join(viewsDir, 'static', 'passkeys.js')),
    '/static/copy.js': readFileSync(join(viewsDir, 'static', 'copy.js')),
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

/**
 * The operator's logo (BRAND_LOGO_FILE), checked at start-up. Pages and mails name it with its
 * version (src/lib/brand.ts logoUrl), so it may be cached long. An SVG can carry script: pages
 * show it through <img>, where no script runs, and opened on its own its policy forbids script,
 * and every other load, while letting its inline styles draw it (CSP Level 3, default-src).
 */
function logoRoute(app: FastifyInstance, logo: NonNullable<Brand['logo']>): void {
  app.get(LOGO_PATH, async (_request, reply) =>
    reply
      .type(logo.type)
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox")
      .header('cache-control', 'public, max-age=86400')
      .send(logo.bytes),
  )
}

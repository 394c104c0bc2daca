import cookie from '@fastify/cookie'
import csrf from '@fastify/csrf-protection'
import helmet from '@fastify/helmet'
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from './deps.js'

/**
 * Cookies, CSRF and the full set of security headers for browser-facing pages. Registered in
 * the page context only: the token, introspection and revocation endpoints serve JSON to
 * servers, and helmet's and the cookie plugin's per-response hooks would cost them throughput
 * for headers no browser reads there.
 */
export async function registerPageSecurity(pages: FastifyInstance, deps: AppDeps): Promise<void> {
  await pages.register(helmet, {
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        styleSrc: ["'self'"],
        scriptSrc: ["'none'"],
        imgSrc: ["'self'", 'data:'],
        // Pages may never be framed (clickjacking on consent, RFC 9700 4.16).
        frameAncestors: ["'none'"],
        // The consent form's 303 goes to the client's redirect URI, which browsers check
        // against form-action; the consent route sets its own policy naming that origin.
        formAction: ["'self'"],
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: deps.config.publicUrl.startsWith('https:'),
  })
  await pages.register(cookie)
  await pages.register(csrf, {
    cookieKey: 'gatehouse_csrf',
    cookieOpts: { path: '/', httpOnly: true, sameSite: 'lax', secure: deps.config.cookieSecure },
    getToken: (request) => {
      const body = request.body as Record<string, unknown> | undefined
      return typeof body?._csrf === 'string' ? body._csrf : undefined
    },
  })
}

import cookie from '@fastify/cookie'
import csrf from '@fastify/csrf-protection'
import helmet, { type HelmetOptions } from 'helmet'
import type { FastifyInstance } from 'fastify'
import type { Services } from '../services.js'

/**
 * helmet's headers for a configuration, computed once. helmet (and @fastify/helmet) rebuild
 * the policy on every response, which profiles showed as a tenth of a page request's CPU;
 * the headers depend only on the configuration, so they are captured here and set as is.
 */
export function securityHeaders(options: HelmetOptions): ReadonlyArray<readonly [string, string]> {
  const headers = new Map<string, string>()
  const res = {
    setHeader: (name: string, value: string | number | string[]) => {
      headers.set(name.toLowerCase(), String(value))
    },
    removeHeader: (name: string) => {
      headers.delete(name.toLowerCase())
    },
  }
  helmet(options)({} as never, res as never, () => {})
  return [...headers]
}

/**
 * Cookies, CSRF and the full set of security headers for browser-facing pages. Registered in
 * the page context only: the token, introspection and revocation endpoints serve JSON to
 * servers, and the cookie plugin's per-response hooks would cost them throughput for headers
 * no browser reads there.
 */
export async function registerPageSecurity(pages: FastifyInstance, deps: Services): Promise<void> {
  const headers = securityHeaders({
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
        // Only where there is https to upgrade to; on plain http it would break every request.
        upgradeInsecureRequests: deps.config.publicUrl.startsWith('https:') ? [] : null,
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: deps.config.publicUrl.startsWith('https:'),
  })
  pages.addHook('onRequest', (_request, reply, done) => {
    for (const [name, value] of headers) reply.header(name, value)
    done()
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

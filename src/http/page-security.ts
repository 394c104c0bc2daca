import cookie from '@fastify/cookie'
import csrf from '@fastify/csrf-protection'
import helmet, { type HelmetOptions } from 'helmet'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import type { Services } from '../services.js'
import { cookieNames, cookieSpec } from './cookies.js'

/**
 * helmet's headers for a configuration, computed once. helmet (and @fastify/helmet) rebuild
 * the policy on every response, a large share of a page request's CPU;
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
 * The security headers of every page, for a configuration: the Content-Security-Policy,
 * framing, referrer and transport rules. Computed once per app.
 */
export function pageSecurityHeaders(config: Pick<Services['config'], 'publicUrl'>): ReadonlyArray<readonly [string, string]> {
  return securityHeaders({
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
        upgradeInsecureRequests: config.publicUrl.startsWith('https:') ? [] : null,
      },
    },
    frameguard: { action: 'deny' },
    // Not no-referrer: under it browsers send `Origin: null` on a same-origin form POST (Fetch,
    // "append a request Origin header"), which the same-origin rule below must refuse.
    // same-origin still sends no Referer to any other site.
    referrerPolicy: { policy: 'same-origin' },
    strictTransportSecurity: config.publicUrl.startsWith('https:'),
  })
}

/**
 * Cookies, CSRF and the full set of security headers for browser-facing pages. Registered in
 * the page context only: the token, introspection and revocation endpoints serve JSON to
 * servers, and the cookie plugin's per-response hooks would cost them throughput for headers
 * no browser reads there.
 */
export async function registerPageSecurity(pages: FastifyInstance, deps: Services): Promise<void> {
  const headers = pageSecurityHeaders(deps.config)
  pages.addHook('onRequest', function pageHeaders(_request, reply, done) {
    for (const [name, value] of headers) reply.header(name, value)
    done()
  })
  await pages.register(cookie)
  const csrfCookie = cookieSpec(deps.config, 'csrf')
  await pages.register(csrf, {
    cookieKey: csrfCookie.name,
    cookieOpts: csrfCookie.options,
    getToken: (request) => {
      const body = request.body as Record<string, unknown> | undefined
      return typeof body?._csrf === 'string' ? body._csrf : undefined
    },
  })
  // After the cookie plugin's own onRequest hook, so the error page can read and set cookies.
  const ownOrigin = new URL(deps.config.publicUrl).origin
  pages.addHook('onRequest', function refuseCrossOrigin(request, _reply, done) {
    if (SAFE_METHODS.has(request.method) || request.routeOptions.config.crossSiteForm === true) return done()
    const reason = crossOriginReason(request.headers, ownOrigin)
    if (reason === undefined) return done()
    request.log.warn({ reason: reason.slice(0, 200) }, 'cross-origin request refused')
    done(new CrossOriginRequestError(deps.config.serviceName))
  })
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A POST other sites' pages send by design, and that changes nothing another site could not
     * change with a GET of the same route: the end_session_endpoint's form (OpenID Connect
     * RP-Initiated Logout 1.0 2), which ends a session unasked only for a caller holding an ID
     * Token of that very session. The same-origin rule below does not apply to it.
     */
    crossSiteForm?: boolean
  }
}

/** Methods that change nothing (RFC 9110 9.2.1); every other method in the page context is a form. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Sec-Fetch-Site values of a request started by Gatehouse's own page, or by the user (typed, bookmarked). */
const OWN_FETCH_SITES = new Set(['same-origin', 'none'])

/**
 * Why a state-changing request did not come from Gatehouse's own pages, or undefined when it may
 * have. A second line behind the CSRF token (OWASP Cross-Site Request Forgery Prevention Cheat
 * Sheet: Fetch Metadata headers, and verifying the origin with standard headers): browsers set
 * both headers themselves and no page can forge them. Either header may be absent (older browsers, non-browser clients), and
 * then the CSRF token alone decides. `Origin: null` (an opaque origin: a sandboxed frame, a
 * data: URL, a cross-origin redirect) is foreign, like any other origin than PUBLIC_URL's.
 */
export function crossOriginReason(headers: IncomingHttpHeaders, ownOrigin: string): string | undefined {
  const site = headers['sec-fetch-site']
  if (site !== undefined && !(typeof site === 'string' && OWN_FETCH_SITES.has(site))) return `Sec-Fetch-Site: ${String(site)}`
  const origin = headers.origin
  if (origin !== undefined && origin !== ownOrigin) return `Origin: ${origin}`
  return undefined
}

export class CrossOriginRequestError extends Error {
  readonly statusCode = 403
  readonly code = 'GATEHOUSE_CROSS_ORIGIN'
  constructor(serviceName: string) {
    super(
      `This form was sent from another site, so ${serviceName} refused it. Nothing was changed. Open ${serviceName} directly and try again.`,
    )
  }
}

/**
 * A new CSRF secret for this browser, set in this response: at log-in and log-out, so that a token
 * issued before (possibly to an attacker who planted the secret cookie) no longer validates
 * after (OWASP Session Management Cheat Sheet, "Renew the Session ID After Any Privilege Level
 * Change"; OWASP CSRF Prevention Cheat Sheet). @fastify/csrf-protection makes a secret only when
 * the request carries none, so the old one is taken out of the request first.
 */
export function rotateCsrfSecret(request: FastifyRequest, reply: FastifyReply, deps: Services): void {
  delete request.cookies[cookieNames(deps.config).csrf]
  reply.generateCsrf()
}

/** The two scripts of the passkey pages, served by src/http/routes/static.ts: the WebAuthn library's browser build, and ours. */
export const PASSKEY_SCRIPTS = ['/static/webauthn-browser.js', '/static/passkeys.js'] as const

/**
 * Lets this page run the passkey scripts, and only them: WebAuthn is a JavaScript API, so the
 * passkey pages (the account's passkeys and the log-in page) are the only ones with a script.
 * Every other page keeps `script-src 'none'`. The sources name each file by its full URL under
 * PUBLIC_URL (CSP Level 3, 6.7.2.9: a path without a trailing slash matches that file only),
 * so no other script of this origin, and no inline script, may run there either.
 */
export function allowPasskeyScripts(reply: FastifyReply, publicUrl: string): void {
  allowScriptFiles(reply, publicUrl, PASSKEY_SCRIPTS)
}

/** The copy buttons' script (views/static/copy.js), served by src/http/routes/static.ts. */
export const COPY_SCRIPT = '/static/copy.js'

/**
 * Lets this page run the copy buttons' script, and only it, as allowPasskeyScripts does for the
 * passkey scripts: the console's application page, whose client ID and secret it copies. The
 * page works without it (the values are plain text to select); the script only adds buttons.
 */
export function allowCopyScript(reply: FastifyReply, publicUrl: string): void {
  allowScriptFiles(reply, publicUrl, [COPY_SCRIPT])
}

/** Replaces this page's script-src with exactly these files of PUBLIC_URL's origin (CSP Level 3, 6.7.2.9). */
function allowScriptFiles(reply: FastifyReply, publicUrl: string, paths: readonly string[]): void {
  const origin = new URL(publicUrl).origin
  const scriptSrc = `script-src ${paths.map((path) => origin + path).join(' ')}`
  const current = String(reply.getHeader('content-security-policy') ?? '')
  reply.header(
    'content-security-policy',
    /script-src [^;]*/.test(current) ? current.replace(/script-src [^;]*/, scriptSrc) : `${current};${scriptSrc}`,
  )
}

/**
 * Lets this page run one inline script, named by its sha256 (CSP Level 3, 8.4 hash-source), and
 * nothing else: the form_post response page (views/oauth/form-post.eta) submits its form with
 * it. `script` must be the exact text between the page's <script> tags.
 */
export function allowInlineScript(reply: FastifyReply, script: string): void {
  const scriptSrc = `script-src 'sha256-${createHash('sha256').update(script, 'utf8').digest('base64')}'`
  const current = String(reply.getHeader('content-security-policy') ?? '')
  reply.header(
    'content-security-policy',
    /script-src [^;]*/.test(current) ? current.replace(/script-src [^;]*/, scriptSrc) : `${current};${scriptSrc}`,
  )
}

import type { FastifyReply } from 'fastify'
import { describeRedirectTarget } from '../oauth/index.js'

/**
 * Lets this page's forms end at a client's redirect URI. Browsers apply CSP form-action to
 * every redirect that follows a form submission (CSP Level 3, Chromium enforces it), so a
 * page whose form leads, through Gatehouse's own redirects, to the client (the consent page,
 * the log-in page of an authorize request) must name the client's origin, validated and
 * registered, next to 'self'. Framing stays forbidden (RFC 9700 4.16). Referrer-Policy stays
 * same-origin: under no-referrer Chromium sends `Origin: null` on the form's own POST, which the
 * same-origin check (src/http/page-security.ts) must refuse.
 */
export function allowFormRedirectTo(reply: FastifyReply, redirectUri: string): void {
  const source = describeRedirectTarget(redirectUri).cspSource
  const current = String(reply.getHeader('content-security-policy') ?? "frame-ancestors 'none'")
  const formAction = `form-action 'self' ${source}`
  const csp = /form-action [^;]*/.test(current) ? current.replace(/form-action [^;]*/, formAction) : `${current};${formAction}`
  reply.header('content-security-policy', csp).header('x-frame-options', 'DENY').header('referrer-policy', 'same-origin')
}

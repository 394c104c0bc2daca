import type { CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { DEVICE_COOKIE_MAX_AGE_SECONDS, PENDING_LOGIN_MAX_AGE_SECONDS } from '../accounts/index.js'
import type { Services } from '../services.js'

/*
 * Every cookie Gatehouse sets, its name and its attributes, in this one module (docs/applications.md "Console"):
 * routes set, clear and read cookies only through setCookie, clearCookie and cookieValue below.
 */

/** The unprefixed names, as sent over plain http (and by tests and the benchmark there). */
export const SESSION_COOKIE = 'gatehouse_session'
export const CSRF_COOKIE = 'gatehouse_csrf'
/** The log-in device cookie (src/accounts/login/device-cookies.ts). */
export const DEVICE_COOKIE = 'gatehouse_device'
/** The id of a pending WebAuthn challenge (src/http/routes/account/passkeys.ts), for five minutes. */
export const WEBAUTHN_COOKIE = 'gatehouse_webauthn'
/** The log-in waiting for its second factor (src/accounts/second-factor/pending-login.ts): a random id, five minutes. */
export const PENDING_LOGIN_COOKIE = 'gatehouse_pending_login'

export interface CookieNames {
  readonly session: string
  readonly csrf: string
  readonly device: string
  readonly webauthn: string
  readonly pendingLogin: string
}

export type CookieKind = keyof CookieNames

/** One cookie: its name under this configuration, and the options of reply.setCookie (@fastify/cookie). */
export interface CookieSpec {
  readonly name: string
  readonly options: Readonly<CookieSerializeOptions>
}

type CookieConfig = Pick<Services['config'], 'publicUrl' | 'cookieSecure' | 'sessionTtlMs'>

interface CookieTable {
  readonly names: CookieNames
  readonly specs: Readonly<Record<CookieKind, CookieSpec>>
}

/**
 * The table of each configuration, built at its first use: the session cookie is read on every
 * page request, which then costs one lookup and no allocation.
 */
const tables = new WeakMap<CookieConfig, CookieTable>()

function tableOf(config: CookieConfig): CookieTable {
  let table = tables.get(config)
  if (!table) {
    table = buildTable(config)
    tables.set(config, table)
  }
  return table
}

/**
 * The names: when the public URL is https (and cookies are Secure), every cookie carries the
 * `__Host-` prefix (RFC 6265bis 4.1.3.2; OWASP Session Management Cheat Sheet, "Cookies"): a
 * browser stores such a cookie only with Secure, Path=/ and no Domain, so neither a sibling
 * subdomain nor a plain-http response can plant or overwrite it (cookie tossing, which would
 * defeat a double-submit CSRF check). On plain http a browser refuses the prefix, so the names
 * stay as they are.
 *
 * The attributes: all host-only (no Domain) with Path=/, as the prefix requires; HttpOnly, since
 * no script reads any of them; Secure whenever COOKIE_SECURE is (docs/operating/configuration.md).
 * SameSite=Lax, so that a log-in or consent reached by a link from another site still carries the
 * session; Strict for the WebAuthn challenge, which only Gatehouse's own script sends back.
 */
function buildTable(config: CookieConfig): CookieTable {
  const prefix = config.cookieSecure && config.publicUrl.startsWith('https:') ? '__Host-' : ''
  const lax = { path: '/', httpOnly: true, sameSite: 'lax', secure: config.cookieSecure } as const
  const spec = (name: string, options: CookieSerializeOptions): CookieSpec =>
    Object.freeze({ name: `${prefix}${name}`, options: Object.freeze(options) })
  const specs = Object.freeze({
    session: spec(SESSION_COOKIE, { ...lax, maxAge: Math.floor(config.sessionTtlMs / 1000) }),
    // A browser-session cookie: @fastify/csrf-protection sets it with these options (src/http/page-security.ts).
    csrf: spec(CSRF_COOKIE, { ...lax }),
    device: spec(DEVICE_COOKIE, { ...lax, maxAge: DEVICE_COOKIE_MAX_AGE_SECONDS }),
    // LIFETIMES.webauthnChallengeMs (src/limits/policy.ts): the challenge's own five minutes.
    webauthn: spec(WEBAUTHN_COOKIE, { ...lax, sameSite: 'strict', maxAge: 300 }),
    pendingLogin: spec(PENDING_LOGIN_COOKIE, { ...lax, maxAge: PENDING_LOGIN_MAX_AGE_SECONDS }),
  })
  const names = Object.freeze({
    session: specs.session.name,
    csrf: specs.csrf.name,
    device: specs.device.name,
    webauthn: specs.webauthn.name,
    pendingLogin: specs.pendingLogin.name,
  })
  return { names, specs }
}

/** The names of every cookie under this configuration (see buildTable). */
export function cookieNames(config: CookieConfig): CookieNames {
  return tableOf(config).names
}

/** The name and options of one cookie under this configuration. */
export function cookieSpec(config: CookieConfig, kind: CookieKind): CookieSpec {
  return tableOf(config).specs[kind]
}

/** Sets cookie `kind` to `value` in this response, with its name and attributes. */
export function setCookie(reply: FastifyReply, deps: Pick<Services, 'config'>, kind: CookieKind, value: string): void {
  const { name, options } = cookieSpec(deps.config, kind)
  reply.setCookie(name, value, options)
}

/**
 * Clears cookie `kind` in the browser. A browser replaces (here: expires) a cookie only when
 * name, Path and Domain match (RFC 6265 5.3 step 11), and one with the `__Host-` prefix only
 * with Secure: so with the options it was set with; @fastify/cookie's clearCookie puts
 * Max-Age=0 and an Expires in the past in place of the Max-Age.
 */
export function clearCookie(reply: FastifyReply, deps: Pick<Services, 'config'>, kind: CookieKind): void {
  const { name, options } = cookieSpec(deps.config, kind)
  reply.clearCookie(name, options)
}

/** The value of cookie `kind` this request carries, under this configuration's name. */
export function cookieValue(request: FastifyRequest, deps: Pick<Services, 'config'>, kind: CookieKind): string | undefined {
  return request.cookies[tableOf(deps.config).names[kind]]
}

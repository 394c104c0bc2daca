import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { linkTo, mailboxes } from './mailbox.js'

/**
 * A cookie jar over app.inject that behaves like a browser: keeps cookies, reads the CSRF
 * token from the page it just loaded, and posts forms.
 */
export class BrowserSession {
  readonly cookies = new Map<string, string>()
  lastCsrf: string | undefined

  constructor(
    readonly app: FastifyInstance,
    readonly remoteAddress = '127.0.0.1',
  ) {}

  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  private remember(res: LightMyRequestResponse): void {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>) {
      const expired = c.maxAge === 0 || (c.expires && c.expires.getTime() <= Date.now()) || c.value === ''
      if (expired) this.cookies.delete(c.name)
      else this.cookies.set(c.name, c.value)
    }
    const m = /name="_csrf" value="([^"]+)"/.exec(res.body)
    if (m) this.lastCsrf = m[1]
  }

  async get(url: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    const res = await this.app.inject({
      method: 'GET',
      url,
      remoteAddress: this.remoteAddress,
      headers: { cookie: this.cookieHeader, ...headers },
    })
    this.remember(res)
    return res
  }

  /**
   * Posts a form; `_csrf` is taken from the last page unless the fields set it (or null omits it).
   * `headers` adds what a browser would send besides (Origin, Sec-Fetch-Site).
   */
  async post(
    url: string,
    fields: Record<string, string | string[] | null>,
    headers: Record<string, string> = {},
  ): Promise<LightMyRequestResponse> {
    const params = new URLSearchParams()
    const withCsrf = '_csrf' in fields ? fields : { _csrf: this.lastCsrf ?? '', ...fields }
    for (const [k, v] of Object.entries(withCsrf)) {
      if (v === null) continue
      for (const one of Array.isArray(v) ? v : [v]) params.append(k, one)
    }
    const res = await this.app.inject({
      method: 'POST',
      url,
      remoteAddress: this.remoteAddress,
      headers: { cookie: this.cookieHeader, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: params.toString(),
    })
    this.remember(res)
    return res
  }

  /**
   * Posts JSON as views/static/passkeys.js does: the page's cookies and CSRF token, keeping the
   * cookies set. A string body is sent as it is (no CSRF token added).
   */
  async postJson(url: string, body: object | string = {}, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    const payload = typeof body === 'string' ? body : JSON.stringify({ _csrf: this.lastCsrf, ...body })
    const res = await this.app.inject({
      method: 'POST',
      url,
      remoteAddress: this.remoteAddress,
      headers: { cookie: this.cookieHeader, 'content-type': 'application/json', ...headers },
      payload,
    })
    this.remember(res)
    return res
  }

  /**
   * Signs up and logs in through the real pages; returns this session, logged in. Unless
   * `verify` is false, the address is verified first as its owner would: the verification link
   * of the mail the app sent (test/helpers/mailbox.ts) is opened and confirmed. An app without a
   * test mailbox, or an address that was registered already, is not verified.
   */
  async signUpAndLogIn(email: string, password = 'correct horse battery', options: { verify?: boolean } = {}): Promise<this> {
    await this.get('/signup')
    const signup = await this.post('/signup', { email, password })
    if (signup.statusCode !== 303) throw new Error(`sign-up failed: ${signup.statusCode} ${signup.body.slice(0, 300)}`)
    const mailbox = mailboxes.get(this.app)
    const link =
      mailbox && options.verify !== false
        ? linkTo(mailbox.to(email.trim().toLowerCase()).at(-1) ?? { text: '' }, '/verify-email')
        : undefined
    // Opened before any log-in, so the page asks for the password again (docs/accounts.md "Account
    // recovery"): the same one is chosen, and the account ends as a verified one with it.
    if (link) await this.verifyEmail(link, password)
    await this.logIn(email, password)
    return this
  }

  /**
   * Opens a verification link (a path with its query) and confirms it, as the page asks: with
   * `newPassword` when the page asks for one (the first proof without the account's session).
   */
  async verifyEmail(link: string, newPassword?: string): Promise<LightMyRequestResponse> {
    const page = await this.get(link)
    if (page.statusCode !== 200) throw new Error(`verification page: ${page.statusCode} ${page.body.slice(0, 300)}`)
    const token = new URL(link, 'http://x').searchParams.get('token') ?? ''
    const asksPassword = page.body.includes('name="password"')
    if (asksPassword && newPassword === undefined) throw new Error('the verification page asks for a new password')
    const res = await this.post('/verify-email', { token, ...(asksPassword ? { password: newPassword! } : {}) })
    if (res.statusCode !== 303) throw new Error(`verification failed: ${res.statusCode} ${res.body.slice(0, 300)}`)
    return res
  }

  async logIn(email: string, password = 'correct horse battery', next?: string): Promise<LightMyRequestResponse> {
    const page = await this.get(next ? `/login?next=${encodeURIComponent(next)}` : '/login')
    // Logged in already: /login sends the browser on, and the page it lands on carries the form
    // token (log-in rotates the CSRF secret, so the one of the earlier log-in page is dead).
    const location = String(page.headers.location ?? '')
    if (page.statusCode === 303 && location.startsWith('/')) await this.get(location)
    const res = await this.post('/login', { email, password, ...(next ? { next } : {}) })
    if (res.statusCode !== 303) throw new Error(`log-in failed: ${res.statusCode} ${res.body.slice(0, 300)}`)
    return res
  }
}

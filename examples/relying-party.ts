import { randomBytes } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import cookie from '@fastify/cookie'
import formbody from '@fastify/formbody'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import * as oidc from 'openid-client'

/*
 * A relying party that signs its users in with Gatehouse: `npm run example:relying-party`.
 * It knows nothing but the discovery URL, a client ID and a secret; openid-client does the
 * protocol (discovery, code flow with PKCE, nonce and state, ID Token validation, UserInfo).
 *
 * Register an application in the Gatehouse console with redirect URI http://localhost:4001/callback
 * and post-logout redirect URI http://localhost:4001/, then:
 *   GATEHOUSE_ISSUER=http://127.0.0.1:3000 CLIENT_ID=… CLIENT_SECRET=… npm run example:relying-party
 *
 *   GET  /          "Sign in with Gatehouse", or the claims of the signed-in user
 *   GET  /login     sends the browser to Gatehouse (OpenID Connect Core 3.1.2.1)
 *   GET  /callback  exchanges the code, validates the ID Token, reads UserInfo (3.1.3, 5.3)
 *   POST /logout    ends the local session, then Gatehouse's (RP-Initiated Logout 1.0, 2)
 */

export interface RelyingPartyOptions {
  /** The issuer (PUBLIC_URL of Gatehouse); its /.well-known/openid-configuration configures the rest. */
  issuer: string
  clientId: string
  clientSecret: string
  port: number
}

export interface RelyingParty {
  /** http://localhost:PORT, the origin of the redirect and post-logout URIs. */
  url: string
  close(): Promise<void>
}

interface Session {
  /** The sign-in under way: what the answer at /callback must match (PKCE verifier, nonce, state). */
  pending?: { codeVerifier: string; nonce: string; state: string }
  user?: { idToken: string; idTokenClaims: Record<string, unknown>; userInfo: Record<string, unknown> }
  /** The state sent to the end_session_endpoint, to recognise the browser when Gatehouse sends it back. */
  logoutState?: string
}

const SESSION_COOKIE = 'rp_session'
/** Sessions live in memory, keyed by a random cookie; anyone can open /login, so the map is bounded. */
const MAX_SESSIONS = 10_000
const SCOPE = 'openid email profile'

export async function startRelyingParty(options: RelyingPartyOptions): Promise<RelyingParty> {
  const base = `http://localhost:${options.port}`
  const redirectUri = `${base}/callback`
  const postLogoutRedirectUri = `${base}/`
  // openid-client refuses plain http unless told; a local Gatehouse (`npm start`) is http.
  const insecure = new URL(options.issuer).protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : undefined
  const config = await oidc.discovery(new URL(options.issuer), options.clientId, options.clientSecret, undefined, insecure)

  const sessions = new Map<string, Session>()
  function sessionOf(request: FastifyRequest, reply: FastifyReply): Session {
    const id = request.cookies[SESSION_COOKIE]
    const known = id === undefined ? undefined : sessions.get(id)
    if (known) return known
    if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value!)
    const fresh: Session = {}
    const newId = randomBytes(32).toString('base64url')
    sessions.set(newId, fresh)
    // SameSite=Lax: sent on the top-level redirect back from Gatehouse, not on another site's POST.
    // Secure is left off because the example serves plain http on localhost.
    reply.setCookie(SESSION_COOKIE, newId, { path: '/', httpOnly: true, sameSite: 'lax' })
    return fresh
  }

  const app = Fastify()
  await app.register(cookie)
  await app.register(formbody)
  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store')
    reply.header(
      'content-security-policy',
      `default-src 'none'; form-action 'self' ${new URL(options.issuer).origin}; frame-ancestors 'none'`,
    )
  })

  app.get('/', async (request, reply) => {
    const session = sessionOf(request, reply)
    if (session.user) return reply.type('text/html').send(claimsPage(session.user))
    const { state } = request.query as { state?: string }
    const returned = state !== undefined && state === session.logoutState
    if (returned) delete session.logoutState
    return reply.type('text/html').send(homePage(returned))
  })

  app.get('/login', async (request, reply) => {
    const session = sessionOf(request, reply)
    const pending = { codeVerifier: oidc.randomPKCECodeVerifier(), nonce: oidc.randomNonce(), state: oidc.randomState() }
    session.pending = pending
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(pending.codeVerifier),
      code_challenge_method: 'S256',
      nonce: pending.nonce,
      state: pending.state,
    })
    return reply.redirect(url.href)
  })

  app.get('/callback', async (request, reply) => {
    const session = sessionOf(request, reply)
    const pending = session.pending
    delete session.pending
    if (!pending) return reply.code(400).type('text/html').send(errorPage('No sign-in is under way in this browser.'))
    try {
      // Checks state, iss, the code exchange with the PKCE verifier, and the ID Token: signature
      // against the JWKS, iss, aud, exp, nonce (OpenID Connect Core 3.1.3.7).
      const tokens = await oidc.authorizationCodeGrant(config, new URL(request.url, base), {
        pkceCodeVerifier: pending.codeVerifier,
        expectedNonce: pending.nonce,
        expectedState: pending.state,
        idTokenExpected: true,
      })
      const idTokenClaims = tokens.claims()!
      // UserInfo's sub must be the ID Token's (OpenID Connect Core 5.3.4).
      const userInfo = await oidc.fetchUserInfo(config, tokens.access_token, idTokenClaims.sub)
      session.user = { idToken: tokens.id_token!, idTokenClaims, userInfo }
      return reply.redirect('/')
    } catch (err) {
      const message = err instanceof oidc.AuthorizationResponseError ? `Gatehouse answered ${err.error}.` : 'The sign-in failed.'
      console.warn(`sign-in failed: ${err instanceof Error ? err.message : String(err)}`)
      return reply.code(400).type('text/html').send(errorPage(message))
    }
  })

  app.post('/logout', async (request, reply) => {
    // A form another page on this host posted: refuse, so nobody signs our users out for them.
    if (request.headers.origin !== undefined && request.headers.origin !== base) return reply.code(403).send()
    const session = sessionOf(request, reply)
    const user = session.user
    delete session.user
    if (!user || !config.serverMetadata().end_session_endpoint) return reply.redirect('/')
    session.logoutState = oidc.randomState()
    const url = oidc.buildEndSessionUrl(config, {
      id_token_hint: user.idToken,
      post_logout_redirect_uri: postLogoutRedirectUri,
      state: session.logoutState,
    })
    return reply.redirect(url.href)
  })

  await app.listen({ port: options.port, host: 'localhost' })
  return { url: base, close: () => app.close() }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head>
<body><main>
<h1>${escapeHtml(title)}</h1>
${body}
</main></body>
</html>`
}

function homePage(signedOutOfGatehouse: boolean): string {
  const notice = signedOutOfGatehouse ? '<p role="status">You are signed out, here and at Gatehouse.</p>\n' : ''
  return page('Example relying party', `${notice}<p><a href="/login">Sign in with Gatehouse</a></p>`)
}

function claimsTable(caption: string, claims: Record<string, unknown>): string {
  const rows = Object.entries(claims)
    .map(
      ([name, value]) =>
        `<tr><th scope="row">${escapeHtml(name)}</th><td>${escapeHtml(typeof value === 'string' ? value : JSON.stringify(value))}</td></tr>`,
    )
    .join('\n')
  return `<table>\n<caption>${escapeHtml(caption)}</caption>\n<thead><tr><th scope="col">Claim</th><th scope="col">Value</th></tr></thead>\n<tbody>\n${rows}\n</tbody>\n</table>`
}

function claimsPage(user: NonNullable<Session['user']>): string {
  return page(
    'Signed in with Gatehouse',
    [
      claimsTable('ID Token', user.idTokenClaims),
      claimsTable('UserInfo', user.userInfo),
      '<form method="post" action="/logout"><button type="submit">Sign out</button></form>',
    ].join('\n'),
  )
}

function errorPage(message: string): string {
  return page('Sign-in failed', `<p>${escapeHtml(message)}</p>\n<p><a href="/">Back to the start</a></p>`)
}

async function main(env: Record<string, string | undefined>): Promise<void> {
  if (!env.CLIENT_ID || !env.CLIENT_SECRET) {
    console.error('Set CLIENT_ID and CLIENT_SECRET (an application registered in the Gatehouse console).')
    process.exit(1)
  }
  const issuer = env.GATEHOUSE_ISSUER ?? 'http://127.0.0.1:3000'
  const rp = await startRelyingParty({
    issuer,
    clientId: env.CLIENT_ID,
    clientSecret: env.CLIENT_SECRET,
    port: Number(env.PORT ?? 4001),
  }).catch((err: Error) => {
    console.error(`Could not start against ${issuer} (is Gatehouse running there?): ${err.message}`)
    process.exit(1)
  })
  console.log(`Example relying party on ${rp.url}`)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void rp.close().then(() => process.exit(0)))
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.env)

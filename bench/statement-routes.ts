import { decodeNotice } from '@gatehouse/verifier/shared'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type SessionUser, resolveSession } from '../src/accounts/sessions/sessions.js'
import { loadConfig } from '../src/config.js'
import type { DatabaseHandle } from '../src/db/connect.js'
import { sha256Hex } from '../src/lib/crypto.js'
import { generateAccessToken, generateAuthorizationCode } from '../src/lib/tokens.js'
import { LIFETIMES, QUOTAS } from '../src/limits/policy.js'
import { revokeTokenOfClient } from '../src/repositories/access-tokens.js'
import { type CodeFlowSettings, insertCodeUnderGrant } from '../src/repositories/authorization-codes.js'
import { consumeCodeAndInsertToken } from '../src/repositories/code-exchange.js'
import { SESSION_COOKIE } from './cases.js'

/*
 * Baselines E–H and P (docs/performance.md): each write path's own statements, sent through
 * Gatehouse's repository functions from bare Fastify, with none of Gatehouse's HTTP or protocol
 * layers. They are the real ceiling of a path with today's schema: the PostgreSQL work the path
 * cannot avoid, plus the least Node work that can send it. A Gatehouse row over its own
 * statements' row is what Gatehouse's layers cost; the statements' row over C or D is what the
 * statements cost beyond one INSERT.
 */

/** CODE_ISSUE_LIMIT as the benchmark's Gatehouse runs with it: the default. */
const CODES_PER_MINUTE = loadConfig({}).quotas.codesPerMinute
/**
 * Not Gatehouse's revocation channel: no process listens here, as no process listens to D's.
 * Gatehouse's revoke row also pays for its own process receiving the notice.
 */
const CHANNEL = 'bench_g'
/**
 * P's channel, which this process LISTENs on as every Gatehouse process LISTENs on its own
 * revocation channel (docs/decisions/003-revocation-propagation.md): each notice P's statement
 * sends comes back to the process that sent it, through PostgreSQL's listening backend.
 */
const HEARD_CHANNEL = 'bench_p'

interface CodeQuery {
  client_id: string
  redirect_uri: string
  state: string
}

interface ClientBody {
  client_id: string
  client_secret: string
}

/** The code remembered consent inserts for a plain `read` request (src/oauth/authorize/authorization.ts newCode). */
function rememberedCodeRow(code: string, userId: string, redirectUri: string, now: Date) {
  return {
    codeHash: sha256Hex(code),
    userId,
    scopes: ['read'],
    redirectUri,
    codeChallenge: null,
    codeChallengeMethod: null,
    now,
    expiresAt: new Date(now.getTime() + LIFETIMES.authorizationCodeMs),
    identity: null,
  }
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, value] = part.trim().split('=')
    if (key === name) return value
  }
  return undefined
}

export async function statementRoutes(app: FastifyInstance, database: DatabaseHandle): Promise<void> {
  const db = database.db
  // E: the code exchange's one statement (consumeCodeAndInsertToken).
  app.post<{ Body: ClientBody & { code: string; redirect_uri: string } }>('/e', async (request, reply) => {
    const b = request.body
    const token = generateAccessToken()
    const issued = await consumeCodeAndInsertToken(db, {
      clientId: b.client_id,
      secretHash: sha256Hex(b.client_secret),
      codeHash: sha256Hex(b.code),
      tokenHash: sha256Hex(token),
      now: new Date(),
      redirectUri: b.redirect_uri,
      verifier: undefined,
      // RESOURCE_TOKEN_TTL_SECONDS_DEFAULT's default: the bench's codes name no resource.
      resourceTtlSeconds: 3600,
    })
    if (!issued) return reply.code(400).send({ error: 'invalid_grant' })
    return { access_token: token, token_type: 'Bearer' }
  })

  // F: remembered consent's two statements: the session's user, then the code under the grant.
  // H: its one statement, the session's user already read (Gatehouse's session cache).
  const settings = new Map<string, Promise<CodeFlowSettings | undefined>>()
  const settingsOf = (clientId: string) => {
    let found = settings.get(clientId)
    if (!found) {
      found = db.selectFrom('applications').selectAll().where('client_id', '=', clientId).executeTakeFirst()
      settings.set(clientId, found)
    }
    return found
  }
  const sessions = new Map<string, SessionUser | undefined>()
  const remembered = (cached: boolean) => async (request: FastifyRequest<{ Querystring: CodeQuery }>, reply: FastifyReply) => {
    const now = new Date()
    const q = request.query
    const id = cookieValue(request.headers.cookie, SESSION_COOKIE)
    let user = id === undefined || !cached ? undefined : sessions.get(id)
    if (id !== undefined && user === undefined) {
      user = await resolveSession(db, id, now, { userAgent: request.headers['user-agent'], ip: request.ip })
      if (cached) sessions.set(id, user)
    }
    const application = await settingsOf(q.client_id)
    if (!user || !application) return reply.code(400).send({ error: 'no session or no application' })
    const code = generateAuthorizationCode()
    const row = rememberedCodeRow(code, user.id, q.redirect_uri, now)
    const result = await insertCodeUnderGrant(db, row, application, user, CODES_PER_MINUTE, QUOTAS.codesPerGrant.windowMs)
    if (result !== 'issued') return reply.code(400).send({ error: result })
    return reply.redirect(`${q.redirect_uri}?code=${code}&state=${encodeURIComponent(q.state)}`, 302)
  }
  app.get<{ Querystring: CodeQuery }>('/f', remembered(false))
  app.get<{ Querystring: CodeQuery }>('/h', remembered(true))

  // G: the revocation's one statement, its NOTIFY included (revokeTokenOfClient). P: the same on
  // a channel this process hears, each notice decoded as Gatehouse's revocation bus decodes it:
  // what a revocation costs when the processes that must drop the token listen, its own among them.
  const revokeOn =
    (channel: string) =>
    async (request: FastifyRequest<{ Body: ClientBody & { token: string } }>, reply: FastifyReply): Promise<FastifyReply> => {
      const b = request.body
      const revoked = await revokeTokenOfClient(db, {
        clientId: b.client_id,
        secretHash: sha256Hex(b.client_secret),
        tokenHash: sha256Hex(b.token),
        now: new Date(),
        channel,
      })
      if (!revoked) return reply.code(400).send({ error: 'not revoked' })
      return reply.code(200).send()
    }
  app.post<{ Body: ClientBody & { token: string } }>('/g', revokeOn(CHANNEL))
  await database.listen(HEARD_CHANNEL, decodeNotice)
  app.post<{ Body: ClientBody & { token: string } }>('/p', revokeOn(HEARD_CHANNEL))
}

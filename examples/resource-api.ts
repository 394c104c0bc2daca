import { randomUUID } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
// In another service: import { createVerifier, gatehouseVerifier } from '@gatehouse/verifier'
import { type ResourceMetadataOptions, type VerifiedToken, type Verifier, createVerifier, gatehouseVerifier } from '@gatehouse/verifier'

/*
 * A resource API protected by Gatehouse: `npm run example:resource`.
 *
 *   GET  /me      scope read         who the token speaks for (403 for a machine token: nobody)
 *   POST /teams   scope write_teams  (or write) creates a team
 *   GET  /.well-known/oauth-protected-resource   no token: its RFC 9728 metadata, naming Gatehouse
 *
 * Its resource identifier (RFC 8707) is RESOURCE_URL, by default the origin it listens at: a
 * token minted for other resources is refused, and every 401 names the metadata (RFC 9728 §5.1).
 *
 * Over introspection, as a separate service would run it (register an application for the API
 * in the console first; its credentials authenticate the introspection calls):
 *   GATEHOUSE_URL=http://127.0.0.1:3000 CLIENT_ID=… CLIENT_SECRET=… npm run example:resource
 * Or against Gatehouse's own Postgres, as a service that shares the database:
 *   GATEHOUSE_DATABASE_URL=postgres://… npm run example:resource
 */

/** What `GET /me` answers (and the example MCP server's `whoami` tool): the user a token speaks for. */
export type Speaker =
  | { ok: true; user: { user_id: string; email: string | null; application: string; scopes: readonly string[] } }
  | { ok: false; refusal: { error: 'no_user'; error_description: string } }

export function whoIsSpeaking(token: VerifiedToken): Speaker {
  // A machine token (client credentials) speaks for its application alone: there is no "me".
  if (token.kind === 'client' || token.userId === null) {
    return {
      ok: false,
      refusal: { error: 'no_user', error_description: 'This token belongs to an application acting for itself, for no user' },
    }
  }
  return { ok: true, user: { user_id: token.userId, email: token.username, application: token.clientId, scopes: token.scopes } }
}

export async function buildResourceApi(verifier: Verifier): Promise<FastifyInstance> {
  const app = Fastify()
  await app.register(gatehouseVerifier, { verifier })

  app.get('/me', { config: { requiredScope: 'read' } }, async (request, reply) => {
    const me = whoIsSpeaking(request.accessToken!)
    return me.ok ? me.user : reply.code(403).send(me.refusal)
  })

  app.post('/teams', { config: { requiredScope: 'write_teams' } }, async (request, reply) => {
    const body = (request.body ?? {}) as { name?: unknown }
    const name = typeof body.name === 'string' && body.name.trim() !== '' ? body.name.trim() : 'New team'
    // `subject`: the user, or for a machine token its client (RFC 9068 §2.2).
    return reply.code(201).send({ id: randomUUID(), name, created_by: request.accessToken!.subject })
  })

  return app
}

/**
 * The verifier an example builds from its environment, for the resource identifier `resource`:
 * over introspection with CLIENT_ID and CLIENT_SECRET (a resource server's credentials), or in
 * database mode with GATEHOUSE_DATABASE_URL; undefined, after saying why, when neither is set.
 */
export function verifierFromEnv(
  env: Record<string, string | undefined>,
  resource: string,
  resourceMetadata?: ResourceMetadataOptions,
): Verifier | undefined {
  const gatehouse = (env.GATEHOUSE_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '')
  // The issuer the metadata names: Gatehouse's PUBLIC_URL, which is where the example reaches it
  // unless GATEHOUSE_ISSUER says otherwise.
  const audience = { resource, issuer: env.GATEHOUSE_ISSUER ?? gatehouse, resourceMetadata }
  if (env.GATEHOUSE_DATABASE_URL) return createVerifier({ mode: 'database', database: env.GATEHOUSE_DATABASE_URL, ...audience })
  if (env.CLIENT_ID && env.CLIENT_SECRET) {
    return createVerifier({
      ...audience,
      mode: 'introspection',
      introspectionUrl: `${gatehouse}/oauth/introspect`,
      revocationStreamUrl: `${gatehouse}/oauth/revocations/stream`,
      clientId: env.CLIENT_ID,
      clientSecret: env.CLIENT_SECRET,
      onError: (err) => console.warn(`verifier: ${err.message}`),
    })
  }
  console.error('Set CLIENT_ID and CLIENT_SECRET (an application registered in the Gatehouse console), or GATEHOUSE_DATABASE_URL.')
  return undefined
}

async function main(env: Record<string, string | undefined>): Promise<void> {
  const port = Number(env.PORT ?? 4000)
  // The API's own resource identifier.
  const resource = env.RESOURCE_URL ?? `http://127.0.0.1:${port}`
  const verifier = verifierFromEnv(env, resource)
  if (verifier === undefined) process.exit(1)
  const app = await buildResourceApi(verifier)
  app.addHook('onClose', () => verifier.close())
  await app.listen({ port, host: '127.0.0.1' })
  console.log(`Example resource API on http://127.0.0.1:${port} (GET /me, POST /teams)`)
  console.log(`Resource ${resource}, its metadata at ${verifier.resourceMetadata!.url}`)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)))
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.env)

import { pathToFileURL } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
// In another service: import { type VerifiedToken, type Verifier, gatehouseVerifier } from '@gatehouse/verifier'
import { type VerifiedToken, type Verifier, gatehouseVerifier } from '@gatehouse/verifier'
import { verifierFromEnv, whoIsSpeaking } from './resource-api.js'

/*
 * An MCP server protected by Gatehouse: `npm run example:mcp` (docs/agents.md "Try it: an MCP
 * server and the MCP SDK's client").
 *
 *   POST /mcp     scope read   Streamable HTTP (stateless, JSON answers), one tool: `whoami`,
 *                              the user the token speaks for, as the example resource API's GET /me
 *   GET  /.well-known/oauth-protected-resource/mcp   no token: its RFC 9728 metadata, naming Gatehouse
 *
 * Its resource identifier (RFC 8707) is RESOURCE_URL, by default http://127.0.0.1:$PORT/mcp, the
 * URL MCP clients connect to; the MCP endpoint is served at its path. An operator declares it for
 * the resource server whose credentials the verifier uses (`gatehouse apps resources <client_id>
 * --add <RESOURCE_URL>`). A client without a token gets 401 with `resource_metadata` in
 * WWW-Authenticate (RFC 9728 §5.1), discovers Gatehouse from the metadata, and asks for a token
 * with `resource` set to this URL; a token minted for any other resource is refused. Such a token
 * expires (docs/decisions/025-audiences.md), and its expiry reaches the MCP SDK as
 * `AuthInfo.expiresAt`, which the SDK's own bearer middleware requires.
 *
 * Configured as examples/resource-api.ts is: over introspection with a resource server's
 * credentials,
 *   GATEHOUSE_URL=http://127.0.0.1:3000 CLIENT_ID=… CLIENT_SECRET=… npm run example:mcp
 * or against Gatehouse's own Postgres,
 *   GATEHOUSE_DATABASE_URL=postgres://… GATEHOUSE_ISSUER=http://127.0.0.1:3000 npm run example:mcp
 * PORT (default 4002) and RESOURCE_URL as above.
 */

/** The scope every MCP request needs: the tool reads who the user is, nothing more. */
export const MCP_SCOPE = 'read'

/** The SDK's view of a verified token (`extra.authInfo` in a tool), carrying the verifier's own. */
function authInfoOf(token: VerifiedToken, authorization: string | undefined, resource: URL): AuthInfo {
  return {
    // The credential as presented, after its scheme (Bearer or DPoP).
    token: authorization?.slice(authorization.indexOf(' ') + 1) ?? '',
    clientId: token.clientId,
    scopes: [...token.scopes],
    ...(token.expiresAt === null ? {} : { expiresAt: token.expiresAt }),
    resource,
    extra: { gatehouse: token },
  }
}

/** One MCP server per request (the transport is stateless): the `whoami` tool. */
function mcpServer(): McpServer {
  const server = new McpServer({ name: 'gatehouse-example-mcp', version: '1.0.0' })
  server.registerTool(
    'whoami',
    {
      title: 'Who am I',
      description:
        'The user this connection acts for: their id and email, the client application, the granted scopes and when access ends.',
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (extra) => {
      const token = extra.authInfo?.extra?.gatehouse as VerifiedToken
      const me = whoIsSpeaking(token)
      if (!me.ok) return { isError: true, content: [{ type: 'text', text: me.refusal.error_description }] }
      const answer = { ...me.user, audience: token.audience, issued_at: token.issuedAt, expires_at: token.expiresAt }
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] }
    },
  )
  return server
}

/**
 * The MCP server's HTTP side, its endpoint at the path of the verifier's `resource` (which it
 * must have: the metadata and the audience check both depend on it).
 */
export async function buildMcpServer(verifier: Verifier): Promise<FastifyInstance> {
  if (verifier.resource === undefined) throw new RangeError('The MCP server needs a verifier with a `resource`: the URL clients connect to')
  const resource = new URL(verifier.resource)
  const app = Fastify()
  // Requires a token on every route but the metadata's, which it serves (RFC 9728 §3).
  await app.register(gatehouseVerifier, { verifier })

  app.post(resource.pathname, { config: { requiredScope: MCP_SCOPE } }, async (request, reply) => {
    const server = mcpServer()
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    // The transport writes the answer to the raw response itself.
    reply.hijack()
    reply.raw.on('close', () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    const auth = authInfoOf(request.accessToken!, request.headers.authorization, resource)
    await transport.handleRequest(Object.assign(request.raw, { auth }), reply.raw, request.body)
  })

  // A stateless server opens no stream (GET) and holds no session to end (DELETE): MCP's
  // Streamable HTTP transport lets it answer 405.
  app.route({
    method: ['GET', 'DELETE'],
    url: resource.pathname,
    config: { requiredScope: MCP_SCOPE },
    handler: (_request, reply) =>
      reply
        .code(405)
        .header('allow', 'POST')
        .send({ jsonrpc: '2.0', error: { code: -32000, message: 'This MCP server is stateless: POST only' }, id: null }),
  })

  return app
}

async function main(env: Record<string, string | undefined>): Promise<void> {
  const port = Number(env.PORT ?? 4002)
  const resource = env.RESOURCE_URL ?? `http://127.0.0.1:${port}/mcp`
  const verifier = verifierFromEnv(env, resource, { resourceName: 'Example MCP server', scopesSupported: [MCP_SCOPE] })
  if (verifier === undefined) process.exit(1)
  const app = await buildMcpServer(verifier)
  app.addHook('onClose', () => verifier.close())
  await app.listen({ port, host: '127.0.0.1' })
  console.log(`Example MCP server on http://127.0.0.1:${port}${new URL(resource).pathname} (tool whoami, scope ${MCP_SCOPE})`)
  console.log(`Resource ${resource}, its metadata at ${verifier.resourceMetadata!.url}`)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)))
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.env)

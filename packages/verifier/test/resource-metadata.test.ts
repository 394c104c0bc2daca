import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BearerChallenges, DpopChallenges } from '../src/bearer.js'
import { type Verifier, type VerifierOptions, createVerifier } from '../src/core.js'
import type { VerifierDatabase } from '../src/database-source.js'
import { DPOP_SIGNING_ALGS } from '../src/dpop.js'
import { resourceMetadataHandler } from '../src/node.js'
import { audienceCheck } from '../src/resource-metadata.js'
import { parseScopesFile } from '../src/scope-catalogue.js'

/*
 * The `resource` option (RFC 8707) and what it brings: the protected-resource metadata
 * (RFC 9728 §2, §3.1) with its paths, its URL in every challenge (§5.1), and the checks of the
 * options at createVerifier. Introspection-mode verifiers here never look a token up, so no
 * authorization server is needed; the audience check itself runs against Gatehouse in
 * test/integration/resource/audience.test.ts.
 */

const ALGS = `algs="${DPOP_SIGNING_ALGS.join(' ')}"`
const INTROSPECTION = {
  mode: 'introspection',
  introspectionUrl: 'https://auth.example.com/oauth/introspect',
  clientId: 'rs',
  clientSecret: 'rs-secret',
} as const

/** A database handle that is never asked anything: database mode without a database. */
const idleDatabase: VerifierDatabase = {
  query: async () => ({ rows: [] }),
  listen: async () => async () => {},
}

const opened: Verifier[] = []
function verifier(options: Partial<VerifierOptions>): Verifier {
  const v = createVerifier({ ...INTROSPECTION, ...options } as VerifierOptions)
  opened.push(v)
  return v
}
afterAll(async () => {
  await Promise.all(opened.map((v) => v.close()))
})

describe('the metadata document (RFC 9728 §2)', () => {
  it('names the resource, Gatehouse as its authorization server, the built-in scopes, header bearer tokens and DPoP', () => {
    const v = verifier({ resource: 'https://api.example.com' })
    expect(v.resource).toBe('https://api.example.com')
    expect(v.resourceMetadata!.document).toEqual({
      resource: 'https://api.example.com',
      authorization_servers: ['https://auth.example.com'],
      scopes_supported: ['read', 'write', 'write_members', 'write_teams', 'write_events', 'write_users'],
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: [...DPOP_SIGNING_ALGS],
    })
    expect(Object.isFrozen(v.resourceMetadata!.document)).toBe(true)
  })

  it("lists the scopes of the verifier's own scopes file, or those given", () => {
    const scopes = parseScopesFile(
      JSON.stringify({
        scopes: [
          { name: 'invoices:read', description: 'See invoices' },
          { name: 'invoices:write', description: 'Change invoices' },
        ],
      }),
      'scopes.json',
    )
    expect(verifier({ resource: 'https://api.example.com', scopes }).resourceMetadata!.document.scopes_supported).toEqual([
      'invoices:read',
      'invoices:write',
    ])
    const given = verifier({ resource: 'https://api.example.com', scopes, resourceMetadata: { scopesSupported: ['invoices:read'] } })
    expect(given.resourceMetadata!.document.scopes_supported).toEqual(['invoices:read'])
  })

  it('adds resource_name and resource_documentation when given', () => {
    const v = verifier({
      resource: 'https://api.example.com',
      resourceMetadata: { resourceName: ' Orders API ', documentationUrl: 'https://docs.example.com/orders' },
    })
    expect(v.resourceMetadata!.document).toMatchObject({
      resource_name: 'Orders API',
      resource_documentation: 'https://docs.example.com/orders',
    })
  })

  it('names the issuer given, without a trailing slash, or the introspection URL without /oauth/introspect', () => {
    expect(
      verifier({ resource: 'https://api.example.com', issuer: 'https://id.example.com/' }).resourceMetadata!.document.authorization_servers,
    ).toEqual(['https://id.example.com'])
    const underPath = verifier({ resource: 'https://api.example.com', introspectionUrl: 'https://example.com/auth/oauth/introspect' })
    expect(underPath.resourceMetadata!.document.authorization_servers).toEqual(['https://example.com/auth'])
    const database = createVerifier({
      mode: 'database',
      database: idleDatabase,
      resource: 'https://api.example.com',
      issuer: 'https://auth.example.com',
    })
    opened.push(database)
    expect(database.resourceMetadata!.document.authorization_servers).toEqual(['https://auth.example.com'])
  })

  it('is served at the well-known path, and for a resource with a path at the path-suffixed form too (§3.1)', () => {
    const root = verifier({ resource: 'https://api.example.com/' }).resourceMetadata!
    expect(root.paths).toEqual(['/.well-known/oauth-protected-resource'])
    expect(root.url).toBe('https://api.example.com/.well-known/oauth-protected-resource')
    const withPath = verifier({ resource: 'https://api.example.com:8443/tenants/orders' }).resourceMetadata!
    expect(withPath.paths).toEqual(['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/tenants/orders'])
    expect(withPath.url).toBe('https://api.example.com:8443/.well-known/oauth-protected-resource/tenants/orders')
    // §3.3: the document's resource is the identifier exactly as configured.
    expect(withPath.document.resource).toBe('https://api.example.com:8443/tenants/orders')
  })

  it('is absent without a resource, and the challenges are as before', async () => {
    const v = verifier({})
    expect(v.resource).toBeUndefined()
    expect(v.resourceMetadata).toBeUndefined()
    expect(v.verifyCached(undefined)).toMatchObject({ wwwAuthenticate: 'Bearer realm="gatehouse"' })
    expect(v.verifyRequestCached(undefined, undefined)).toMatchObject({ wwwAuthenticate: `Bearer realm="gatehouse", DPoP ${ALGS}` })
    expect(() => resourceMetadataHandler(v)).toThrow(/no resource/)
  })
})

describe('the audience check (RFC 8707 §2)', () => {
  it('refuses an audience that does not name the resource, and takes a token without one', () => {
    const forAnother = audienceCheck('https://api.example.com/orders')
    expect(forAnother(null)).toBe(false)
    expect(forAnother(['https://api.example.com/orders'])).toBe(false)
    expect(forAnother(['https://other.example.com', 'https://api.example.com/orders'])).toBe(false)
    for (const audience of [
      [],
      ['https://other.example.com'],
      ['https://api.example.com'],
      ['https://api.example.com/orders/'],
      ['not a url'],
    ]) {
      expect(forAnother(audience), JSON.stringify(audience)).toBe(true)
    }
  })

  it('compares identifiers as URLs normalised by RFC 3986 §6.2.2-6.2.3: case, default port, an empty path', () => {
    const forAnother = audienceCheck('https://api.example.com')
    for (const same of ['https://api.example.com/', 'HTTPS://API.Example.com:443', 'https://api.example.com:443/']) {
      expect(forAnother([same]), same).toBe(false)
    }
    for (const other of ['http://api.example.com', 'https://api.example.com:8443', 'https://api.example.com/x']) {
      expect(forAnother([other]), other).toBe(true)
    }
  })

  it('without a resource, takes tokens without an audience and refuses every audience', () => {
    expect(audienceCheck(undefined)(null)).toBe(false)
    expect(audienceCheck(undefined)(['https://other.example.com'])).toBe(true)
  })
})

describe('the options, checked at createVerifier', () => {
  it.each([
    ['not a URL', 'api.example.com', /must be an absolute URL/],
    ['http to a host that is not loopback', 'http://api.example.com', /must be an https URL/],
    ['another scheme', 'urn:example:api', /must be an https URL/],
    ['a fragment', 'https://api.example.com/#x', /must not have a fragment/],
    ['an empty fragment', 'https://api.example.com/#', /must not have a fragment/],
    ['a query', 'https://api.example.com/?tenant=1', /must not have a query/],
    ['credentials', 'https://user:pw@api.example.com', /user name or password/],
  ])('refuses a resource with %s', (_, resource, message) => {
    expect(() => createVerifier({ ...INTROSPECTION, resource })).toThrow(message)
    expect(() => createVerifier({ ...INTROSPECTION, resource })).toThrow(RangeError)
  })

  it('allows http for a loopback host, for development', () => {
    for (const resource of ['http://localhost:4000', 'http://127.0.0.1:4000/mcp', 'http://[::1]:4000']) {
      expect(verifier({ resource }).resource).toBe(resource)
    }
  })

  it('requires an issuer in database mode, which knows no URL of Gatehouse', () => {
    expect(() => createVerifier({ mode: 'database', database: idleDatabase, resource: 'https://api.example.com' })).toThrow(
      /issuer is required with resource in database mode/,
    )
  })

  it('refuses a bad issuer, scope, name or documentation URL', () => {
    const resource = 'https://api.example.com'
    expect(() => createVerifier({ ...INTROSPECTION, resource, issuer: 'auth.example.com' })).toThrow(
      /issuer must be an absolute http\(s\) URL/,
    )
    expect(() => createVerifier({ ...INTROSPECTION, resource, issuer: 'https://auth.example.com/?x=1' })).toThrow(
      /issuer must not have a query/,
    )
    expect(() => createVerifier({ ...INTROSPECTION, resource, resourceMetadata: { scopesSupported: ['read', 'a b'] } })).toThrow(
      /"a b" is not a scope/,
    )
    expect(() => createVerifier({ ...INTROSPECTION, resource, resourceMetadata: { resourceName: ' ' } })).toThrow(/resourceName/)
    expect(() => createVerifier({ ...INTROSPECTION, resource, resourceMetadata: { documentationUrl: 'ftp://x' } })).toThrow(
      /documentationUrl must be an http\(s\) URL/,
    )
  })
})

describe('the challenges name the metadata (RFC 9728 §5.1)', () => {
  const url = 'https://api.example.com/.well-known/oauth-protected-resource/orders'
  const meta = `resource_metadata="${url}"`

  it('in every Bearer challenge, and in the DPoP challenge offered beside it', () => {
    const bearer = new BearerChallenges('gatehouse', true, url)
    expect(bearer.missing.wwwAuthenticate).toBe(`Bearer realm="gatehouse", ${meta}, DPoP ${ALGS}, ${meta}`)
    expect(bearer.invalid.wwwAuthenticate).toBe(
      `Bearer realm="gatehouse", error="invalid_token", error_description="The access token is invalid, revoked or malformed", ${meta}, DPoP ${ALGS}, ${meta}`,
    )
    expect(bearer.otherResource).toMatchObject({
      status: 401,
      error: 'invalid_token',
      description: 'The access token is for another resource',
    })
    expect(bearer.otherResource.wwwAuthenticate).toBe(
      `Bearer realm="gatehouse", error="invalid_token", error_description="The access token is for another resource", ${meta}, DPoP ${ALGS}, ${meta}`,
    )
    expect(bearer.forbidden('read').wwwAuthenticate).toBe(
      `Bearer realm="gatehouse", error="insufficient_scope", error_description="The access token lacks the scope read", scope="read", ${meta}, DPoP ${ALGS}, ${meta}`,
    )
    expect(new BearerChallenges('gatehouse', false, url).missing.wwwAuthenticate).toBe(`Bearer realm="gatehouse", ${meta}`)
  })

  it('in every DPoP challenge', () => {
    const dpop = new DpopChallenges(url)
    for (const failure of [
      dpop.invalid,
      dpop.notBound,
      dpop.otherKey,
      dpop.otherResource,
      dpop.missingProof,
      dpop.replayed,
      dpop.proof('x'),
    ]) {
      expect(failure.wwwAuthenticate).toMatch(
        new RegExp(`^DPoP error="[a-z_]+", error_description="[^"]+", ${ALGS}, resource_metadata="${url}"$`),
      )
    }
    expect(dpop.otherResource.wwwAuthenticate).toBe(
      `DPoP error="invalid_token", error_description="The access token is for another resource", ${ALGS}, ${meta}`,
    )
    expect(dpop.forbidden('read').wwwAuthenticate).toBe(
      `DPoP error="insufficient_scope", error_description="The access token lacks the scope read", scope="read", ${ALGS}, ${meta}`,
    )
    expect(new DpopChallenges().invalid.wwwAuthenticate).not.toContain('resource_metadata')
  })

  it('built once: the verifier answers with the same frozen failure each time', () => {
    const v = verifier({ resource: 'https://api.example.com/orders' })
    const first = v.verifyRequestCached(undefined, undefined)!
    expect(first.ok).toBe(false)
    expect(v.verifyRequestCached(undefined, undefined)).toBe(first)
    expect(Object.isFrozen(first)).toBe(true)
    expect(first).toMatchObject({ wwwAuthenticate: `Bearer realm="gatehouse", ${meta}, DPoP ${ALGS}, ${meta}` })
    expect(v.verifyCached('Bearer garbage')).toMatchObject({ status: 401, wwwAuthenticate: expect.stringContaining(meta) })
  })
})

describe('resourceMetadataHandler (node:http, Express)', () => {
  let server: Server
  let base: string
  const passed: string[] = []

  beforeAll(async () => {
    const serve = resourceMetadataHandler(
      verifier({ resource: 'https://api.example.com/orders', resourceMetadata: { resourceName: 'Orders' } }),
    )
    server = createServer((req, res) => {
      if (serve(req, res, () => passed.push(req.url ?? ''))) return
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('answers GET at both paths with the document: JSON, public, cacheable, readable from any origin', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/orders?x=1']) {
      const res = await fetch(`${base}${path}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
      expect(res.headers.get('cache-control')).toBe('public, max-age=3600')
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      expect(await res.json()).toMatchObject({ resource: 'https://api.example.com/orders', resource_name: 'Orders' })
    }
  })

  it('answers HEAD without a body, a CORS preflight with 204, and another method with 405', async () => {
    const head = await fetch(`${base}/.well-known/oauth-protected-resource/orders`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    const preflight = await fetch(`${base}/.well-known/oauth-protected-resource/orders`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://client.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'mcp-protocol-version',
      },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*')
    expect(preflight.headers.get('access-control-allow-headers')).toBe('*')
    const post = await fetch(`${base}/.well-known/oauth-protected-resource`, { method: 'POST' })
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
  })

  it("hands every other request on, another resource's metadata included", async () => {
    passed.length = 0
    for (const path of ['/me', '/.well-known/oauth-protected-resource/other', '/.well-known/oauth-protected-resourcex']) {
      expect((await fetch(`${base}${path}`)).status).toBe(404)
    }
    expect(passed).toEqual(['/me', '/.well-known/oauth-protected-resource/other', '/.well-known/oauth-protected-resourcex'])
  })
})

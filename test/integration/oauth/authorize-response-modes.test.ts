import { createHash } from 'node:crypto'
import type { LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { TEST_ISSUER, type TestClient, authorizeUrl, consentFields, createClient, locationParams, loggedInUser } from './helpers.js'
import { consentedUser, oauthTestFile } from '../../helpers/oauth-set-up.js'

/*
 * response_mode on GET /oauth/authorize (OAuth 2.0 Multiple Response Type Encoding Practices,
 * OAuth 2.0 Form Post Response Mode), docs/oauth-endpoints.md "Response modes (`response_mode`)".
 */

const { t } = oauthTestFile()

const consented = (client: TestClient) => consentedUser(t.app, client, { scope: 'read' })

const request = (client: TestClient, extra: Record<string, string | undefined> = {}) =>
  authorizeUrl({ response_type: 'code', client_id: client.clientId, scope: 'read', state: 'st', ...extra })

/** The form_post page's response form: its action and fields, checked for shape. */
function postedForm(res: LightMyRequestResponse): { action: string; fields: Record<string, string> } {
  const form = /<form id="response-form" method="post" action="([^"]*)">([\s\S]*?)<\/form>/.exec(res.body)
  expect(form, res.body).not.toBeNull()
  const fields: Record<string, string> = {}
  for (const m of form![2]!.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) fields[m[1]!] = m[2]!
  return { action: form![1]!, fields }
}

function expectFormPostPage(res: LightMyRequestResponse, client: TestClient): void {
  expect(res.statusCode).toBe(200)
  expect(res.headers['content-type']).toMatch(/^text\/html/)
  expect(res.headers['cache-control']).toBe('no-store')
  const csp = String(res.headers['content-security-policy'])
  const script = /<script>([^<]*)<\/script>/.exec(res.body)![1]!
  const hash = createHash('sha256').update(script).digest('base64')
  expect(csp).toContain(`script-src 'sha256-${hash}'`)
  expect(csp).not.toContain('unsafe-inline')
  expect(csp).toMatch(/form-action 'self' https:\/\/client\.example:443/)
  expect(res.body).toMatch(/<button type="submit">Continue to client\.example<\/button>/)
  expect(postedForm(res).action).toBe(client.redirectUri)
}

describe('form_post', () => {
  it('answers remembered consent with a page that posts code, state and iss to the redirect URI', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    const res = await s.get(request(client, { response_mode: 'form_post' }))
    expectFormPostPage(res, client)
    const { fields } = postedForm(res)
    expect(Object.keys(fields).sort()).toEqual(['code', 'iss', 'state'])
    expect(fields.code).toMatch(/^gac_/)
    expect(fields.state).toBe('st')
    expect(fields.iss).toBe(TEST_ISSUER)
  })

  it('keeps the mode through the consent page, for an approval and a denial', async () => {
    const client = await createClient(t.db)
    const s = await loggedInUser(t.app)
    for (const decision of ['approve', 'deny']) {
      const page = await s.get(request(client, { response_mode: 'form_post', prompt: 'consent' }))
      expect(page.statusCode).toBe(200)
      const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision })
      expectFormPostPage(res, client)
      const { fields } = postedForm(res)
      if (decision === 'approve') expect(fields.code).toMatch(/^gac_/)
      else expect(fields.error).toBe('access_denied')
    }
  })

  it('delivers errors the same way, escaped', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    const res = await s.get(request(client, { response_mode: 'form_post', scope: 'bogus', state: '"><b>x' }))
    expectFormPostPage(res, client)
    expect(postedForm(res).fields.error).toBe('invalid_scope')
    expect(res.body).not.toContain('"><b>x')
  })

  it('an untrusted error is a page with a button that posts the error', async () => {
    const client = await createClient(t.db)
    const res = await t.app.inject(request(client, { response_mode: 'form_post', prompt: 'none' }))
    expect(res.statusCode).toBe(400)
    expect(res.body).toMatch(/<form method="post" action="https:\/\/client\.example\/cb">/)
    expect(res.body).toContain('<input type="hidden" name="error" value="login_required">')
    expect(String(res.headers['content-security-policy'])).toMatch(/form-action 'self' https:\/\/client\.example:443/)
  })

  it('carries the token flow in a form too', async () => {
    const client = await createClient(t.db, { allowImplicit: true })
    const s = await loggedInUser(t.app)
    const page = await s.get(request(client, { response_type: 'token', response_mode: 'form_post' }))
    const res = await s.post('/oauth/authorize', { ...consentFields(page.body), decision: 'approve' })
    expectFormPostPage(res, client)
    expect(postedForm(res).fields).toMatchObject({ token_type: 'Bearer', scope: 'read', state: 'st', iss: TEST_ISSUER })
    expect(postedForm(res).fields.access_token).toBeTruthy()
  })
})

describe('query and fragment', () => {
  it('code answers in the query by default, and in the fragment when asked', async () => {
    const client = await createClient(t.db)
    const s = await consented(client)
    expect(locationParams(await s.get(request(client, { response_mode: 'query' }))).get('code')).toMatch(/^gac_/)
    const fragment = await s.get(request(client, { response_mode: 'fragment' }))
    expect(String(fragment.headers.location)).toMatch(/^https:\/\/client\.example\/cb#code=gac_/)
    expect(locationParams(fragment, 'fragment').get('state')).toBe('st')
    const error = await s.get(request(client, { response_mode: 'fragment', scope: 'bogus' }))
    expect(locationParams(error, 'fragment').get('error')).toBe('invalid_scope')
  })

  it('refuses query for the token flow, in the fragment, and an unknown mode in the default one', async () => {
    const client = await createClient(t.db, { allowImplicit: true })
    const s = await consented(client)
    const token = await s.get(request(client, { response_type: 'token', response_mode: 'query' }))
    expect(token.statusCode).toBe(302)
    expect(String(token.headers.location)).not.toContain('?')
    expect(locationParams(token, 'fragment').get('error')).toBe('invalid_request')
    const unknown = await s.get(request(client, { response_mode: 'web_message' }))
    expect(locationParams(unknown).get('error')).toBe('invalid_request')
    expect(locationParams(unknown).get('error_description')).toMatch(/response_mode/)
  })
})

/*
 * A single-page app that signs its users in with Gatehouse, in the browser alone: oidc-client-ts
 * (unmodified, loaded as its browser build, the global `oidc`) runs discovery, the code flow
 * with PKCE S256, and the token exchange as a public client (client_id alone, from this page's
 * origin, which Gatehouse allows by CORS because it is a registered single-page app's). The
 * page then calls UserInfo with the access token, and signs out through the end_session_endpoint.
 * docs/applications.md "Which kind of application?"; served by examples/spa/server.ts.
 */
'use strict'

const status = document.getElementById('status')

async function start() {
  const config = await (await fetch('/config.json')).json()
  const origin = window.location.origin
  const manager = new oidc.UserManager({
    authority: config.issuer,
    client_id: config.clientId,
    redirect_uri: `${origin}/`,
    post_logout_redirect_uri: `${origin}/`,
    response_type: 'code',
    scope: 'openid email profile',
    // Tokens for this tab only, gone when it closes.
    userStore: new oidc.WebStorageStateStore({ store: window.sessionStorage }),
  })
  const query = new URLSearchParams(window.location.search)
  if (query.has('code') || query.has('error')) {
    await manager.signinRedirectCallback()
    window.history.replaceState(null, '', '/')
  } else if (query.has('state')) {
    // Back from the end_session_endpoint (RP-Initiated Logout 1.0, 3).
    await manager.signoutRedirectCallback()
    window.history.replaceState(null, '', '/')
  }
  document.getElementById('sign-in').addEventListener('click', () => void manager.signinRedirect())
  document.getElementById('sign-out').addEventListener('click', () => void manager.signoutRedirect())

  const user = await manager.getUser()
  if (!user || user.expired) {
    status.textContent = 'You are not signed in.'
    document.getElementById('sign-in').hidden = false
    return
  }
  const metadata = await manager.metadataService.getMetadata()
  const answer = await fetch(metadata.userinfo_endpoint, { headers: { authorization: `Bearer ${user.access_token}` } })
  if (!answer.ok) throw new Error(`UserInfo answered ${answer.status}`)
  showClaims(await answer.json())
  status.textContent = 'Signed in with Gatehouse.'
  document.getElementById('signed-in').hidden = false
}

function showClaims(claims) {
  const body = document.getElementById('claims')
  for (const [name, value] of Object.entries(claims)) {
    const row = body.insertRow()
    const th = document.createElement('th')
    th.scope = 'row'
    th.textContent = name
    row.append(th)
    row.insertCell().textContent = typeof value === 'string' ? value : JSON.stringify(value)
  }
}

start().catch((error) => {
  status.textContent = `Sign-in failed: ${error.message}`
})

/*
 * Gatehouse's passkey pages (README "Passkeys"): adding a passkey on /account/passkeys and
 * "Sign in with a passkey" on /login. WebAuthn is a JavaScript API, so these are the only pages
 * with a script; their content security policy allows this file and the WebAuthn library's
 * browser build (/static/webauthn-browser.js, global SimpleWebAuthnBrowser), nothing else.
 * Without JavaScript the forms stay hidden and the pages say why; the password keeps working.
 */
;(function () {
  'use strict'
  var lib = window.SimpleWebAuthnBrowser

  function show(element, message) {
    if (!element) return
    element.textContent = message
    element.hidden = false
  }

  async function postJson(url, body) {
    var response = await fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    })
    var data = {}
    try {
      data = await response.json()
    } catch {
      data = {}
    }
    if (!response.ok) throw new Error(data.error || 'Something went wrong. Reload the page and try again.')
    return data
  }

  /** What the browser's own refusals mean to the person. */
  function ceremonyMessage(error) {
    if (error && error.name === 'NotAllowedError') return 'The passkey request was cancelled or timed out. Try again.'
    if (error && error.name === 'InvalidStateError') return 'This passkey is already registered to your account.'
    return (error && error.message) || 'Something went wrong. Reload the page and try again.'
  }

  function csrfOf(container) {
    var input = container.querySelector('input[name="_csrf"]')
    return input ? input.value : ''
  }

  function setUp(container, run) {
    var fallback = document.getElementById(container.getAttribute('data-fallback'))
    var status = document.getElementById(container.getAttribute('data-status'))
    if (!lib || !lib.browserSupportsWebAuthn()) {
      show(fallback, 'This browser cannot use passkeys.')
      return
    }
    if (fallback) fallback.hidden = true
    container.hidden = false
    container.addEventListener('submit', async function (event) {
      event.preventDefault()
      var button = container.querySelector('button')
      if (button) button.disabled = true
      if (status) status.hidden = true
      try {
        var data = await run(container)
        window.location.assign(data.redirect)
      } catch (error) {
        show(status, ceremonyMessage(error))
        if (button) button.disabled = false
      }
    })
  }

  async function register(form) {
    var csrf = csrfOf(form)
    var start = await postJson(form.getAttribute('data-options'), { _csrf: csrf })
    var response = await lib.startRegistration({ optionsJSON: start.options })
    var name = form.querySelector('input[name="name"]')
    // Adding a factor asks for the password (or an app code) typed on this form (README "Passkeys").
    var password = form.querySelector('input[name="password"]')
    var code = form.querySelector('input[name="code"]')
    return postJson(form.getAttribute('data-verify'), {
      _csrf: csrf,
      name: name ? name.value : '',
      password: password ? password.value : '',
      code: code ? code.value : '',
      response: response,
    })
  }

  async function signIn(form) {
    var csrf = csrfOf(form)
    var start = await postJson(form.getAttribute('data-options'), { _csrf: csrf })
    var response = await lib.startAuthentication({ optionsJSON: start.options })
    var next = form.querySelector('input[name="next"]')
    return postJson(form.getAttribute('data-verify'), { _csrf: csrf, next: next ? next.value : '', response: response })
  }

  document.querySelectorAll('form[data-passkey="register"]').forEach(function (form) {
    setUp(form, register)
  })
  document.querySelectorAll('form[data-passkey="sign-in"]').forEach(function (form) {
    setUp(form, signIn)
  })
})()

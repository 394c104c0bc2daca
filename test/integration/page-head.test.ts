import { afterAll, beforeAll, expect, it } from 'vitest'
import { type TestContext, buildTestApp } from '../helpers/app.js'

/*
 * Every page's <head> (views/layouts/base.eta): a title that names the page and then the
 * service, or the service alone on the home page, never the service twice; and the icon it links,
 * served from Gatehouse itself under the pages' img-src 'self'.
 */

let t: TestContext
beforeAll(async () => {
  t = await buildTestApp({ SERVICE_NAME: 'Acme ID' })
})
afterAll(() => t.close())

const titleOf = (html: string) => /<title>([^<]*)<\/title>/.exec(html)?.[1]

it('names the home page by the service once, and any other page by the page and then the service', async () => {
  expect(titleOf((await t.app.inject('/')).body)).toBe('Acme ID')
  expect(titleOf((await t.app.inject('/login')).body)).toBe('Log in · Acme ID')
  expect(titleOf((await t.app.inject('/no-such-page')).body)).toMatch(/^[^·]+ · Acme ID$/)
})

it('links its icon, which Gatehouse serves as SVG', async () => {
  const home = await t.app.inject('/')
  expect(home.body).toContain('<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">')
  expect(home.headers['content-security-policy']).toMatch(/img-src 'self'/)
  const icon = await t.app.inject('/static/favicon.svg')
  expect(icon.statusCode).toBe(200)
  expect(icon.headers['content-type']).toBe('image/svg+xml')
  expect(icon.headers['x-content-type-options']).toBe('nosniff')
  expect(icon.body).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/)
})

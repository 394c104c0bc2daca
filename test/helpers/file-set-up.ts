import { afterAll, beforeAll } from 'vitest'
import { type TestContext, buildTestApp } from './app.js'
import { type ApplicationFixture, type UserFixture, createApplication, createUser } from './factories.js'

/**
 * A test file's shared set-up, built in its beforeAll and closed in its afterAll, handed out
 * at the top of the file before it exists: `const { t, client } = someSetUp()`. Each part is a
 * stand-in that forwards every read, write and method call to the object `build` made for it,
 * so the tests use it as they would the object itself; a part reached before beforeAll has run
 * (at the file's top level, say) throws rather than reading undefined. `close` runs in afterAll,
 * with whatever parts `build` made before it failed.
 */
export function fileSetUp<T extends { [K in keyof T]: object }>(
  build: (parts: Partial<T>) => Promise<void>,
  close: (parts: Partial<T>) => Promise<void>,
): T {
  const built: Partial<T> = {}
  beforeAll(() => build(built))
  afterAll(() => close(built))
  const standIns = new Map<string | symbol, object>()
  return new Proxy({} as T, {
    get(_, name) {
      let standIn = standIns.get(name)
      if (!standIn) {
        standIn = forwardTo(() => {
          const part = built[name as keyof T]
          if (!part) throw new Error(`the set-up's ${String(name)} was used before beforeAll built it`)
          return part
        })
        standIns.set(name, standIn)
      }
      return standIn
    },
  })
}

/** An object that behaves as `target()`: what the stand-ins of fileSetUp are. */
function forwardTo(target: () => object): object {
  return new Proxy(
    {},
    {
      get: (_, key) => Reflect.get(target(), key),
      set: (_, key, value) => Reflect.set(target(), key, value),
      has: (_, key) => Reflect.has(target(), key),
      deleteProperty: (_, key) => Reflect.deleteProperty(target(), key),
      ownKeys: () => Reflect.ownKeys(target()),
      // Reported configurable: the stand-in's own (empty) target may not claim otherwise.
      getOwnPropertyDescriptor: (_, key) => {
        const descriptor = Reflect.getOwnPropertyDescriptor(target(), key)
        return descriptor && { ...descriptor, configurable: true }
      },
      getPrototypeOf: () => Reflect.getPrototypeOf(target()),
    },
  )
}

/** A test file's app (buildTestApp with `env`): built in its beforeAll, closed in its afterAll. */
export function testAppFile(env: Record<string, string> = {}): { t: TestContext } {
  return fileSetUp<{ t: TestContext }>(
    async (parts) => {
      parts.t = await buildTestApp(env)
    },
    async (parts) => parts.t?.close(),
  )
}

/**
 * A test file's app (buildTestApp with `env`) and, inserted by factory, one user for each name
 * of `emails` with that address: `const { t, alice } = appWithUsersTestFile({ alice: '…' })`.
 */
export function appWithUsersTestFile<Name extends string>(
  emails: Record<Name, string>,
  env: Record<string, string> = {},
): { t: TestContext } & Record<Name, UserFixture> {
  type Parts = { t: TestContext } & Record<Name, UserFixture>
  return fileSetUp<Parts>(
    async (parts) => {
      const t = await buildTestApp(env)
      Object.assign(parts, { t })
      for (const [name, email] of Object.entries<string>(emails)) Object.assign(parts, { [name]: await createUser(t.db, { email }) })
    },
    async (parts) => parts.t?.close(),
  )
}

export interface ResourceServerSetUp {
  t: TestContext
  /** Owns `app`. */
  user: UserFixture
  /** An ordinary application of `user`'s, the tokens' client. */
  app: ApplicationFixture
  /** An application marked as a resource server: may introspect and follow the revocation stream. */
  rs: ApplicationFixture
}

/**
 * A test file's app (buildTestApp) with, inserted by factory, a user, an application of theirs
 * and a resource server (named `resourceServerName`), to check that user's tokens for it.
 */
export function resourceServerTestFile(options: {
  userEmail?: string
  applicationName?: string
  resourceServerName: string
}): ResourceServerSetUp {
  return fileSetUp<ResourceServerSetUp>(
    async (parts) => {
      const t = (parts.t = await buildTestApp())
      parts.user = await createUser(t.db, options.userEmail ? { email: options.userEmail } : {})
      parts.app = await createApplication(t.db, {
        ownerId: parts.user.id,
        ...(options.applicationName ? { name: options.applicationName } : {}),
      })
      parts.rs = await createApplication(t.db, { name: options.resourceServerName, resourceServer: true })
    },
    async (parts) => parts.t?.close(),
  )
}

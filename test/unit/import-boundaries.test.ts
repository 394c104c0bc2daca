import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'

/*
 * The layers of docs/architecture.md, as the lint rules in eslint.config.js enforce them: each
 * case is an import a file in that folder may or may not make, one refused case per rule of the
 * table at least.
 */
const eslint = new ESLint()
const RULES = new Set(['no-restricted-imports', '@typescript-eslint/no-restricted-imports'])
const DOOR_RULE = '@typescript-eslint/no-restricted-imports'

async function refusals(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath })
  return result!.messages.filter((m) => m.ruleId != null && RULES.has(m.ruleId)).map((m) => m.message)
}

async function refuses(filePath: string, code: string): Promise<boolean> {
  return (await refusals(filePath, `${code}\nexport const used = x\n`)).length > 0
}

describe('import boundaries (docs/architecture.md)', () => {
  it.each([
    // The verifier package: nothing of the server.
    ['packages/verifier/src/x.ts', "import { buildApp as x } from '../../../src/app.js'"],
    ['packages/verifier/src/x.ts', "import { digest as x } from '../../../src/lib/tokens.js'"],
    // lib/, db/, repositories/, mail/: only what lies below them.
    ['src/lib/x.ts', "import { findUserByEmail as x } from '../repositories/users.js'"],
    ['src/db/x.ts', "import { findUserByEmail as x } from '../repositories/users.js'"],
    ['src/repositories/x.ts', "import { parseScope as x } from '../oauth/scope.js'"],
    ['src/repositories/x.ts', "import type { Config as x } from '../config.js'"],
    ['src/mail/x.ts', "import { loadConfig as x } from '../config.js'"],
    // Domain folders: no Fastify, SQL, drivers, nodemailer, HTTP, command line, root modules, configuration.
    ['src/oauth/x.ts', "import x from 'fastify'"],
    ['src/oauth/x.ts', "import { sql as x } from 'kysely'"],
    ['src/revocation/x.ts', "import x from 'pg'"],
    ['src/accounts/x.ts', "import x from 'nodemailer'"],
    ['src/oauth/x.ts', "import { render as x } from '../http/render.js'"],
    ['src/operator/x.ts', "import { runCommand as x } from '../cli/run.js'"],
    ['src/audit/x.ts', "import { createServices as x } from '../services.js'"],
    ['src/console/x.ts', "import { VIEWS_DIR as x } from '../paths.js'"],
    ['src/accounts/x.ts', "import type { Config as x } from '../config.js'"],
    ['src/limits/x.ts', "import { loadConfig as x } from '../config.js'"],
    // http/: the doors; no repositories (not even types), no command line, drivers, nodemailer, SQL.
    ['src/http/x.ts', "import { describeFailure as x } from '../db/availability.js'"],
    ['src/http/routes/x.ts', "import { VIEWS_DIR as x } from '../../paths.js'"],
    ['src/http/routes/account/x.ts', "import { signUp as x } from '../../../accounts/sign-up/signup.js'"],
    ['src/http/routes/account/x.ts', "import { loadConfig as x } from '../../../config.js'"],
    ['src/http/routes/x.ts', "import { findUserByEmail as x } from '../../repositories/users.js'"],
    ['src/http/routes/x.ts', "import type { UserRow as x } from '../../repositories/users.js'"],
    ['src/http/x.ts', "import { runCommand as x } from '../cli/run.js'"],
    ['src/http/x.ts', "import x from 'pg'"],
    ['src/http/x.ts', "import x from 'nodemailer'"],
    ['src/http/x.ts', "import { sql as x } from 'kysely'"],
    // cli/: the doors; no Fastify, HTTP, repositories, drivers, nodemailer, SQL.
    ['src/cli/x.ts', "import { suspendUser as x } from '../operator/moderation.js'"],
    ['src/cli/x.ts', "import { migrateToLatest as x } from '../db/migrate.js'"],
    ['src/cli/x.ts', "import x from 'fastify'"],
    ['src/cli/x.ts', "import { render as x } from '../http/render.js'"],
    ['src/cli/x.ts', "import { findUserByEmail as x } from '../repositories/users.js'"],
    ['src/cli/x.ts', "import x from 'pg'"],
    ['src/cli/x.ts', "import x from 'nodemailer'"],
    ['src/cli/x.ts', "import { sql as x } from 'kysely'"],
    // The doors: an edge imports a domain through its index.ts only, values and types alike.
    ['src/http/routes/oauth/x.ts', "import { exchangeCode as x } from '../../../oauth/token/token-exchange.js'"],
    ['src/http/routes/oauth/x.ts', "import type { ServerTokenCache as x } from '../../../oauth/token/token-validity.js'"],
    ['src/http/x.ts', "import type { SessionUser as x } from '../accounts/sessions/sessions.js'"],
    ['src/http/routes/console/x.ts', "import { parseApplicationForm as x } from '../../../applications/application-form.js'"],
    ['src/cli/x.ts', "import { COMMAND_LINE as x } from '../audit/actor.js'"],
    ['src/app.ts', "import { requestParams as x } from './oauth/params.js'"],
    // The composition root: only src/server.ts and src/cli.ts import its values; the edges its type.
    ['src/http/x.ts', "import { createServices as x } from '../services.js'"],
    ['src/http/routes/oauth/x.ts', "import { createServices as x } from '../../../services.js'"],
    ['src/cli/x.ts', "import { createServices as x } from '../services.js'"],
    ['src/app.ts', "import { createServices as x } from './services.js'"],
    ['src/probes.ts', "import { createServices as x } from './services.js'"],
    ['src/service-lifecycle.ts', "import { createServices as x } from './services.js'"],
  ])('%s may not: %s', async (file, code) => {
    expect(await refuses(file, code)).toBe(true)
  })

  it.each([
    ['packages/verifier/src/x.ts', "import { scopeSatisfies as x } from './scope.js'"],
    ['src/lib/x.ts', "import { sha256Hex as x } from '@gatehouse/verifier/shared'"],
    ['src/db/x.ts', "import { systemClock as x } from '../lib/clock.js'"],
    ['src/repositories/x.ts', "import type { Db as x } from '../db/connect.js'"],
    ['src/oauth/x.ts', "import { findUserByEmail as x } from '../repositories/users.js'"],
    ['src/oauth/x.ts', "import type { Kysely as x } from 'kysely'"],
    ['src/audit/x.ts', "import { listAuditEvents as x } from '../repositories/audit-events.js'"],
    ['src/console/x.ts', "import { AuditLog as x } from '../audit/audit-log.js'"],
    ['src/revocation/x.ts', "import { describeFailure as x } from '../db/availability.js'"],
    ['src/http/x.ts', "import type { Services as x } from '../services.js'"],
    ['src/http/routes/account/x.ts', "import type { Services as x } from '../../../services.js'"],
    ['src/http/routes/account/x.ts', "import type { SessionUser as x } from '../../../accounts/index.js'"],
    ['src/http/routes/oauth/x.ts', "import { requestParams as x } from '../../../oauth/index.js'"],
    ['src/http/routes/console/x.ts', "import { parseApplicationForm as x } from '../../../applications/index.js'"],
    ['src/http/x.ts', "import { databaseUnavailable as x } from '../db/index.js'"],
    ['src/app.ts', "import type { Services as x } from './services.js'"],
    ['src/app.ts', "import { registerSession as x } from './http/session.js'"],
    ['src/server.ts', "import { createServices as x } from './services.js'"],
    ['src/cli.ts', "import { createServices as x } from './services.js'"],
    ['src/http/routes/x.ts', "import type { Config as x } from '../../config.js'"],
    ['src/http/routes/account/x.ts', "import { hasControlCharacter as x } from '../../../lib/text.js'"],
    ['src/http/routes/account/x.ts', "import { render as x } from '../../render.js'"],
    ['src/http/routes/account/x.ts', "import { formatTime as x } from '../console/view-models.js'"],
    ['src/http/x.ts', "import { sha256Hex as x } from '@gatehouse/verifier/shared'"],
    ['src/cli/x.ts', "import type { Services as x } from '../services.js'"],
    ['src/cli/x.ts', "import { COMMAND_LINE as x } from '../audit/index.js'"],
    ['src/cli/x.ts', "import type { Config as x } from '../config.js'"],
    ['src/cli/x.ts', "import { formatTable as x } from './output.js'"],
  ])('%s may: %s', async (file, code) => {
    expect(await refuses(file, code)).toBe(false)
  })
})

async function sourcesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => join(e.parentPath, e.name))
}

describe('the doors (docs/architecture.md)', () => {
  it('hold every file of src/http/ and src/cli/, and src/app.ts: none is exempt from the rule', async () => {
    const files = [...(await sourcesUnder('src/http')), ...(await sourcesUnder('src/cli')), 'src/app.ts']
    expect(files.length).toBeGreaterThan(0)
    for (const file of files) {
      const config = (await eslint.calculateConfigForFile(file)) as { rules: Record<string, unknown[]> }
      expect(config.rules[DOOR_RULE]?.[0], file).toBe(2)
    }
  })

  it.each(['accounts', 'oauth', 'applications', 'console', 'operator', 'revocation', 'limits', 'audit', 'mail', 'db'])(
    'gives src/%s/ its door, index.ts',
    async (folder) => {
      const entries = await readdir(join('src', folder))
      expect(entries).toContain('index.ts')
    },
  )
})

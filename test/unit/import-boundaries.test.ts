import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'

/*
 * The layers of docs/architecture.md, as the lint rule in eslint.config.js enforces them: each
 * case is an import a file in that folder may or may not make.
 */
const eslint = new ESLint()

async function refuses(filePath: string, code: string): Promise<boolean> {
  const [result] = await eslint.lintText(`${code}\nexport const used = x\n`, { filePath })
  return result!.messages.some((m) => m.ruleId === 'no-restricted-imports')
}

describe('import boundaries (docs/architecture.md)', () => {
  it.each([
    ['packages/verifier/src/x.ts', "import { buildApp as x } from '../../../src/app.js'"],
    ['packages/verifier/src/x.ts', "import { digest as x } from '../../../src/lib/tokens.js'"],
    ['src/lib/x.ts', "import { findUserByEmail as x } from '../repositories/users.js'"],
    ['src/db/x.ts', "import { findUserByEmail as x } from '../repositories/users.js'"],
    ['src/repositories/x.ts', "import { parseScope as x } from '../oauth/scope.js'"],
    ['src/oauth/x.ts', "import x from 'fastify'"],
    ['src/oauth/x.ts', "import { sql as x } from 'kysely'"],
    ['src/revocation/x.ts', "import x from 'pg'"],
    ['src/oauth/x.ts', "import { render as x } from '../http/render.js'"],
    ['src/audit/x.ts', "import x from 'fastify'"],
    ['src/audit/x.ts', "import { sql as x } from 'kysely'"],
    ['src/audit/x.ts', "import { createServices as x } from '../services.js'"],
    ['src/http/routes/x.ts', "import { findUserByEmail as x } from '../../repositories/users.js'"],
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
    ['src/http/routes/x.ts', "import { parseScope as x } from '../../oauth/scope.js'"],
  ])('%s may: %s', async (file, code) => {
    expect(await refuses(file, code)).toBe(false)
  })
})

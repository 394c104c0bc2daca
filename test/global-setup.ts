import type { TestProject } from 'vitest/node'
import { createDatabaseTemplate } from './helpers/db-template.js'

/** The migrated database every test file of the project clones (test/helpers/db.ts); dropped at the end. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { template, cleanup } = await createDatabaseTemplate(process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || undefined)
  project.provide('databaseTemplate', template)
  return cleanup
}

import type { Migration } from 'kysely'
import * as m0001 from './0001_initial.js'

/** The only list the migrator sees: explicit, ordered, and safe under ESM and bundling. */
export const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
}

import type { Config } from '../config.js'
import type { DatabaseHandle } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'

/** Everything a route group needs, passed down as plugin options: no globals, no env reads. */
export interface AppDeps {
  config: Config
  database: DatabaseHandle
  clock: Clock
}

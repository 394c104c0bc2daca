import { ensureBuilt } from '../helpers/build.js'

/** The fault tests start `node dist/src/server.js`: build it first if the sources are newer. */
export default async function setup(): Promise<void> {
  await ensureBuilt()
}

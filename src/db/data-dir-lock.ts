import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/*
 * PGlite is PostgreSQL inside one process: two processes opening one data directory would
 * both write its files and corrupt it. So whichever Gatehouse process (the server, `npm run
 * migrate`, `gatehouse …`) opens it first holds this lock file, with its process id, until it
 * closes the database; the others refuse with a message naming the holder and change nothing.
 * A lock whose process is gone (killed, crashed) is taken over.
 */

export const LOCK_FILE = 'gatehouse.lock'

export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError'
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `The embedded database in ${dataDir} is in use by another Gatehouse process (pid ${pid}), and PGlite can be opened by one process at a time. Stop that process first, or use a PostgreSQL server (DATABASE_URL); nothing was changed.`,
    )
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: it exists but belongs to someone else, which still holds the directory.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function holder(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/** Takes the data directory for this process; the returned function gives it back. */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600)
      writeSync(fd, `${process.pid}\n`)
      closeSync(fd)
      return () => {
        if (holder(path) === process.pid) unlinkSync(path)
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const pid = holder(path)
      // Our own pid: a lock left by an earlier process that had this pid (a container's pid 1).
      if (pid !== undefined && pid !== process.pid && alive(pid)) throw new DataDirInUseError(dataDir, pid)
      try {
        unlinkSync(path)
      } catch (unlinkErr) {
        if ((unlinkErr as NodeJS.ErrnoException).code !== 'ENOENT') throw unlinkErr
      }
    }
  }
  throw new Error(`Could not take ${path}: another process keeps taking it`)
}

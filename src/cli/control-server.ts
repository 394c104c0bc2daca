import { chmodSync, lstatSync, mkdirSync, unlinkSync } from 'node:fs'
import { dirname } from 'node:path'
import { type Socket, createServer } from 'node:net'
import type { Services } from '../services.js'
import {
  COMMAND_TIMEOUT_MS,
  MAX_REQUEST_CHARS,
  REQUEST_TIMEOUT_MS,
  type Reply,
  controlSocketPath,
  lineSplitter,
  parseRequest,
  socketPathFits,
} from './control-socket.js'
import { type CliEnvironment, runCli } from './run.js'

/*
 * The server's side of the command line beside it (src/cli/control-socket.ts): it answers on
 * DATA_DIR/control/cli.sock and runs each command as `gatehouse` would, through runCli, on its
 * own open services, so the output, the exit code and the audit events (actor: the command line)
 * are those of the command run alone. What a command prints goes back over the socket only,
 * never to the server's log: a command may print a secret.
 *
 * Bounded: one command at a time, at most MAX_CONNECTIONS connections (the others are refused by
 * the operating system's backlog), a request of at most MAX_REQUEST_CHARS, a deadline for the
 * request and for the answer; a malformed request gets a one-line error and the connection closes.
 */

/** Connections open at once: one running, the others waiting their turn. */
const MAX_CONNECTIONS = 8

type Log = Pick<Services['log'], 'info' | 'warn'>

export interface ControlSocket {
  readonly path: string
  /** Stops taking commands, waits for those under way, and removes the socket. */
  close(): Promise<void>
}

/**
 * The directory the socket lives in, the server's user's alone: made with mode 0700, or, left
 * by an earlier start, checked to be a directory (not a link) this user owns and set to 0700.
 * Returns why not, or undefined when ready.
 */
function ownDirectory(dir: string): string | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const stat = lstatSync(dir)
  if (!stat.isDirectory()) return `${dir} is not a directory`
  const uid = process.getuid?.()
  if (uid !== undefined && stat.uid !== uid) return `${dir} belongs to another user`
  chmodSync(dir, 0o700)
  return undefined
}

/**
 * A socket left by a server that was killed. The server holds the data directory's lock when it
 * gets here, so no other Gatehouse process can be answering on it: a socket is removed, anything
 * else is left alone. Returns why the path cannot be used, or undefined.
 */
function removeStaleSocket(path: string): string | undefined {
  try {
    if (!lstatSync(path).isSocket()) return `${path} exists and is not a socket`
    unlinkSync(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  return undefined
}

/**
 * Listens on DATA_DIR's socket, owner-only. A socket that cannot be had (a DATA_DIR too long for
 * a socket's path, a directory of another user) is no reason not to serve: the server says why
 * and the command line refuses as it always has while the server runs.
 */
export async function answerCommands(options: CommandsOptions): Promise<ControlSocket | undefined> {
  const path = controlSocketPath(options.dataDir)
  const unavailable = (reason: unknown) => {
    options.log.warn({ reason }, 'gatehouse commands cannot run beside this server; stop it to run them')
    return undefined
  }
  try {
    const why = socketPathFits(path) ? (ownDirectory(dirname(path)) ?? removeStaleSocket(path)) : `${path} is too long for a socket`
    return why === undefined ? await listen(path, options) : unavailable(why)
  } catch (err) {
    return unavailable(err instanceof Error ? err.message : String(err))
  }
}

interface CommandsOptions {
  dataDir: string
  services: Pick<Services, 'operator' | 'maintenance' | 'identity' | 'scopes'>
  mail: CliEnvironment['mail']
  log: Log
}

async function listen(path: string, options: CommandsOptions): Promise<ControlSocket> {
  const { log } = options
  const { operator, maintenance, identity, scopes } = options.services
  const env: CliEnvironment = {
    // The server's own services, open as long as it runs: the command closes nothing.
    open: async () => ({ operator, maintenance, identity, scopes, close: async () => {} }),
    mail: options.mail,
    inServer: true,
  }
  const queue = oneAtATime()
  const server = createServer((socket) => answer(socket, (argv, io) => queue(() => runCli(argv, env, io)), log))
  server.maxConnections = MAX_CONNECTIONS
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(path, () => {
      server.off('error', reject)
      resolve()
    })
  })
  // The directory already keeps others out; the socket itself says so too.
  chmodSync(path, 0o600)
  server.on('error', (err) => log.warn({ err }, 'the command line socket failed'))
  return {
    path,
    // Node removes a Unix socket's file when its server closes.
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** Runs the work given to it one after the other, in order. */
function oneAtATime() {
  let tail: Promise<unknown> = Promise.resolve()
  return <T>(work: () => Promise<T>): Promise<T> => {
    const next = tail.then(work, work)
    tail = next.catch(() => {})
    return next
  }
}

type Run = (argv: readonly string[], io: { out(text: string): void; err(text: string): void }) => Promise<number>

/** One connection: its request line, then the command's lines and its exit code, then the end. */
function answer(socket: Socket, run: Run, log: Log): void {
  let asked = false
  let finished = false
  const send = (reply: Reply) => {
    if (!finished && socket.writable) socket.write(`${JSON.stringify(reply)}\n`)
  }
  const finish = (code: number) => {
    send({ exit: code })
    finished = true
    socket.setTimeout(0)
    socket.end(() => socket.destroy())
  }
  const refuse = (reason: string) => {
    if (finished) return
    asked = true
    log.warn({ reason }, 'a request on the command line socket was refused')
    send({ err: `gatehouse: ${reason}` })
    finish(1)
  }
  // A client gone before its answer: the command still finishes, there is no one to tell.
  socket.on('error', () => {})
  socket.setEncoding('utf8')
  socket.setTimeout(REQUEST_TIMEOUT_MS, () => refuse('no request arrived in time'))
  const onLine = (line: string) => {
    if (asked) return
    asked = true
    socket.setTimeout(0)
    const argv = parseRequest(line)
    if (argv === undefined) return refuse('malformed request: expected one line of {"argv": [strings]}')
    const deadline = setTimeout(() => {
      send({ err: `gatehouse: the server did not finish the command within ${COMMAND_TIMEOUT_MS / 1000} s; it may still finish` })
      finish(1)
    }, COMMAND_TIMEOUT_MS)
    run(argv, { out: (text) => send({ out: text }), err: (text) => send({ err: text }) })
      .then(finish, () => finish(1))
      .finally(() => clearTimeout(deadline))
  }
  socket.on(
    'data',
    lineSplitter(onLine, MAX_REQUEST_CHARS, () => refuse(`request longer than ${MAX_REQUEST_CHARS} characters`)),
  )
}

import { join } from 'node:path'

/*
 * The command line beside a running embedded server (docs/operating/command-line.md "Beside a running server"). PGlite
 * is opened by one process at a time (src/db/data-dir-lock.ts), so while the server holds
 * DATA_DIR, `gatehouse …` sends its arguments to it over a Unix domain socket under DATA_DIR, in
 * a directory only the server's user may enter (src/cli/control-server.ts), and the server runs
 * the command with its own services (src/cli/control-client.ts is the command line's side).
 *
 * The exchange is JSON, one object a line: the command line sends {"argv": [...]}; the server
 * answers with {"out": text} and {"err": text} as the command prints them, then {"exit": code},
 * and closes the connection.
 */

/** DATA_DIR/control/cli.sock: a directory of its own, mode 0700, so that no other user reaches the socket. */
export const CONTROL_DIR = 'control'
const CONTROL_SOCKET = 'cli.sock'

export function controlSocketPath(dataDir: string): string {
  return join(dataDir, CONTROL_DIR, CONTROL_SOCKET)
}

/**
 * A Unix socket's path has at most 103 bytes on macOS, 107 on Linux (sockaddr_un's sun_path,
 * unix(7)); a DATA_DIR too long for it has no socket, and the command line refuses as before.
 */
export function socketPathFits(path: string): boolean {
  return Buffer.byteLength(path) <= 103
}

/** A request is a few words of argv: anything longer is refused unread. */
export const MAX_REQUEST_CHARS = 16 * 1024
export const MAX_ARGS = 64

/** How long the server waits for a connection's request line, and for its command to finish. */
export const REQUEST_TIMEOUT_MS = 5_000
export const COMMAND_TIMEOUT_MS = 60_000

export type Reply = { out: string } | { err: string } | { exit: number }

/** The argv of a request line, or undefined for anything but {"argv": [strings]} within the caps. */
export function parseRequest(line: string): string[] | undefined {
  let request: unknown
  try {
    request = JSON.parse(line)
  } catch {
    return undefined
  }
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return undefined
  const argv = (request as { argv?: unknown }).argv
  if (!Array.isArray(argv) || argv.length > MAX_ARGS || !argv.every((a) => typeof a === 'string')) return undefined
  return argv as string[]
}

/** One reply line as the server sent it, or undefined for anything else. */
export function parseReply(line: string): Reply | undefined {
  let reply: unknown
  try {
    reply = JSON.parse(line)
  } catch {
    return undefined
  }
  if (typeof reply !== 'object' || reply === null) return undefined
  const r = reply as Record<string, unknown>
  if (typeof r.out === 'string') return { out: r.out }
  if (typeof r.err === 'string') return { err: r.err }
  if (typeof r.exit === 'number' && Number.isInteger(r.exit)) return { exit: r.exit }
  return undefined
}

/**
 * Splits a stream's text into lines for `onLine`; `onOverflow` instead once the text waiting for
 * its line break passes `maxChars`, after which nothing more is read.
 */
export function lineSplitter(onLine: (line: string) => void, maxChars = Infinity, onOverflow: () => void = () => {}) {
  let pending = ''
  let stopped = false
  return (chunk: string) => {
    if (stopped) return
    pending += chunk
    for (let end = pending.indexOf('\n'); end !== -1 && !stopped; end = pending.indexOf('\n')) {
      const line = pending.slice(0, end)
      pending = pending.slice(end + 1)
      if (line.length > maxChars) {
        stopped = true
        onOverflow()
      } else onLine(line)
    }
    if (!stopped && pending.length > maxChars) {
      stopped = true
      onOverflow()
    }
  }
}

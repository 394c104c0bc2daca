import { connect } from 'node:net'
import { COMMAND_TIMEOUT_MS, controlSocketPath, lineSplitter, parseReply, socketPathFits } from './control-socket.js'
import type { CliIo } from './run.js'

/*
 * The command line's side of the socket (src/cli/control-socket.ts): used when the embedded
 * database's lock is held, it sends argv to the server that holds it and prints what the server
 * answers, line for line, on stdout and stderr as the command would have printed them alone.
 */

/** Longer than the server's own deadline, which answers first: this one is for a server that no longer answers at all. */
const NO_ANSWER_MS = COMMAND_TIMEOUT_MS + 10_000

/**
 * Runs `argv` in the server answering on DATA_DIR's socket; its exit code, or undefined when
 * nothing answers there (no socket: the lock's holder is another command, or a server started
 * without one), in which case nothing was sent and the caller refuses as before.
 */
export function forwardToServer(dataDir: string, argv: readonly string[], io: CliIo): Promise<number | undefined> {
  const path = controlSocketPath(dataDir)
  if (!socketPathFits(path)) return Promise.resolve(undefined)
  return new Promise((resolve) => {
    let connected = false
    let code: number | undefined
    const socket = connect(path, () => {
      connected = true
      socket.write(`${JSON.stringify({ argv })}\n`)
    })
    const broken = (why: string) => {
      if (code !== undefined) return
      code = 1
      io.err(`gatehouse: ${why}`)
    }
    socket.setEncoding('utf8')
    socket.setTimeout(NO_ANSWER_MS, () => {
      broken('the running server did not answer; the command may or may not have run')
      socket.destroy()
    })
    socket.on(
      'data',
      lineSplitter((line) => {
        const reply = parseReply(line)
        if (reply === undefined) broken("the running server's answer could not be read")
        else if ('out' in reply) io.out(reply.out)
        else if ('err' in reply) io.err(reply.err)
        else code ??= reply.exit
      }),
    )
    socket.on('error', () => {})
    socket.on('close', () => {
      if (!connected) return resolve(undefined)
      broken('the running server closed the connection before the command finished (it may be stopping, or busy with other commands)')
      resolve(code)
    })
  })
}

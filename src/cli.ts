import { ConfigError, loadProcessConfig } from './config.js'
import { forwardToServer } from './cli/control-client.js'
import { runCli } from './cli/run.js'
import { createServices } from './services.js'

/*
 * The command line's process entry, as src/server.ts is the server's: it reads the
 * environment and argv, runs one command (src/cli/run.ts) on the services built as the
 * server's are (role 'cli') and exits with its code. With the embedded database held by the
 * running server, the command is run by that server (src/cli/control-socket.ts).
 */

try {
  const config = loadProcessConfig()
  const code = await runCli(
    process.argv.slice(2),
    {
      open: () => createServices(config, { role: 'cli' }),
      mail: config.mail,
      ...(config.databaseUrl === undefined ? { forward: (argv, io) => forwardToServer(config.dataDir, argv, io) } : {}),
    },
    {
      out: (text) => console.log(text),
      err: (text) => console.error(text),
    },
  )
  process.exitCode = code
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `gatehouse: ${err instanceof Error ? err.message : String(err)}`)
  process.exitCode = 1
}

import { type ParseArgsConfig, parseArgs } from 'node:util'

type Options = NonNullable<ParseArgsConfig['options']>
type Values<O extends Options> = ReturnType<typeof parseArgs<{ options: O }>>['values']

/**
 * The options of a bench command, with `--help`: a mistyped or unknown option, or `--help`,
 * prints the options and where they are described instead of a stack trace (exit 2 for a
 * mistake, 0 for `--help`).
 */
export function benchArguments<O extends Options>(command: string, options: O, described: string): Values<O> {
  const usage = () =>
    [
      `usage: ${command} [options]`,
      ...Object.entries(options).map(([name, o]) => `  --${name}${o.type === 'string' ? ' VALUE' : ''}`),
      '  --help',
      `described in ${described}`,
    ].join('\n')
  if (process.argv.slice(2).includes('--help')) {
    console.log(usage())
    process.exit(0)
  }
  try {
    return parseArgs({ options }).values
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage()}`)
    process.exit(2)
  }
}

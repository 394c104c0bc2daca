import { expect } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config.js'

/** The one message with which loadConfig refuses `env` (a start-up that stops with exit 78); fails if it does not. */
export function configRefusal(env: Record<string, string>): string {
  try {
    loadConfig(env)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as Error).message
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`)
}

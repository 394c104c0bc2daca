import { describe, expect, it } from 'vitest'
import {
  type AvailabilityChange,
  DatabaseAvailability,
  DatabaseUnavailableError,
  connectionLost,
  databaseUnavailable,
  describeFailure,
} from '../../src/db/availability.js'

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code })

describe('connectionLost / databaseUnavailable', () => {
  it.each([
    ['a refused connection', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['a reset socket', withCode('read ECONNRESET', 'ECONNRESET')],
    ['a restart or pg_terminate_backend (57P01)', withCode('terminating connection due to administrator command', '57P01')],
    ['a server starting up (57P03)', withCode('the database system is starting up', '57P03')],
    ['too many connections (53300)', withCode('sorry, too many clients already', '53300')],
    ['a connection exception (class 08)', withCode('connection failure', '08006')],
    ['pg on a socket that closed', new Error('Connection terminated unexpectedly')],
    ['pg on a dead client', new Error('Client has encountered a connection error and is not queryable')],
    ['no connection from the pool', new DatabaseUnavailableError('none', { cause: new Error('timeout exceeded when trying to connect') })],
    ['a cause further down', new Error('query failed', { cause: withCode('read ECONNRESET', 'ECONNRESET') })],
    ['every address of a dual-stack connect', new AggregateError([withCode('x', 'ECONNREFUSED'), withCode('y', 'ECONNREFUSED')])],
  ])('%s is a lost connection, so a 503', (_name, err) => {
    expect(connectionLost(err)).toBe(true)
    expect(databaseUnavailable(err)).toBe(true)
  })

  it('a statement cancelled by statement_timeout (57014) is a 503 but not an outage', () => {
    const err = withCode('canceling statement due to statement timeout', '57014')
    expect(databaseUnavailable(err)).toBe(true)
    expect(connectionLost(err)).toBe(false)
  })

  it.each([
    ['a unique violation', withCode('duplicate key value violates unique constraint', '23505')],
    ['a syntax error', withCode('syntax error at or near "selec"', '42601')],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['not an error at all', 'ECONNRESET'],
  ])('%s is not', (_name, err) => {
    expect(databaseUnavailable(err)).toBe(false)
  })
})

describe('DatabaseAvailability', () => {
  function tracked() {
    let now = 1000
    const availability = new DatabaseAvailability(() => now)
    const changes: AvailabilityChange[] = []
    availability.onChange((c) => changes.push(c))
    return { availability, changes, advance: (ms: number) => (now += ms) }
  }

  it('tells an outage once when it starts and once when it ends, with its length and what it refused', () => {
    const { availability, changes, advance } = tracked()
    const lost = withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')
    availability.lost(lost)
    availability.lost(lost)
    for (let i = 0; i < 3; i++) availability.refused(lost)
    expect(availability.up).toBe(false)
    advance(1500)
    availability.reachable()
    availability.reachable()
    expect(changes).toEqual([
      { up: false, cause: lost },
      { up: true, downMs: 1500, refused: 3 },
    ])
    expect(availability.up).toBe(true)
    expect(availability.refusedTotal).toBe(3)
  })

  it('a request refused for a lost connection starts the outage; one refused for a statement timeout does not', () => {
    const { availability, changes } = tracked()
    availability.refused(withCode('canceling statement due to statement timeout', '57014'))
    expect(availability.up).toBe(true)
    expect(changes).toEqual([])
    availability.refused(new Error('Connection terminated unexpectedly'))
    expect(availability.up).toBe(false)
    availability.reachable()
    expect(changes.at(-1)).toEqual({ up: true, downMs: 0, refused: 1 })
    expect(availability.refusedTotal).toBe(2)
  })

  it('counts each outage on its own', () => {
    const { availability, changes } = tracked()
    availability.refused(new Error('Connection terminated unexpectedly'))
    availability.reachable()
    availability.refused(new Error('Connection terminated unexpectedly'))
    availability.refused(new Error('Connection terminated unexpectedly'))
    availability.reachable()
    expect(changes.filter((c) => c.up)).toEqual([
      { up: true, downMs: 0, refused: 1 },
      { up: true, downMs: 0, refused: 2 },
    ])
  })
})

describe('describeFailure', () => {
  it('is one line: each message with its code, causes included, no stack', () => {
    const err = new DatabaseUnavailableError('No database connection could be had', {
      cause: withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
    })
    expect(describeFailure(err)).toBe('No database connection could be had: connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED)')
    expect(describeFailure('gone')).toBe('gone')
  })
})

import { describe, expect, it } from 'vitest'
import { clientAddressForAudit, clientAddressKey } from '../../src/limits/client-address.js'

describe('clientAddressKey', () => {
  it('keys an IPv4 address by itself', () => {
    expect(clientAddressKey('203.0.113.7')).toBe('203.0.113.7')
  })

  it.each([
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:DB8:0001:0002::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.33', '64:ff9b:0:0::/64'],
  ])('keys the IPv6 address %s by its /64, %s', (address, key) => {
    expect(clientAddressKey(address)).toBe(key)
  })

  it('gives every address of one /64 the same key and a neighbouring /64 another', () => {
    expect(clientAddressKey('2001:db8:a:b::1')).toBe(clientAddressKey('2001:db8:a:b:dead:beef:0:1'))
    expect(clientAddressKey('2001:db8:a:b::1')).not.toBe(clientAddressKey('2001:db8:a:c::1'))
  })

  it('keys an IPv4-mapped IPv6 address as the IPv4 address, in either notation', () => {
    expect(clientAddressKey('::ffff:1.2.3.4')).toBe('1.2.3.4')
    expect(clientAddressKey('::FFFF:102:304')).toBe('1.2.3.4')
    expect(clientAddressKey('0:0:0:0:0:ffff:1.2.3.4')).toBe('1.2.3.4')
  })

  it('returns what is not an address unchanged', () => {
    expect(clientAddressKey('not an address')).toBe('not an address')
  })
})

describe('clientAddressForAudit', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:1.2.3.4', '1.2.3.4'],
    ['2001:DB8:0001:0002::1', '2001:db8:1:2::1'],
    ['2001:db8:0:0:0:0:0:1', '2001:db8::1'],
    ['fe80::1%eth0', 'fe80::1'],
  ])('records %s as %s', (address, recorded) => {
    expect(clientAddressForAudit(address)).toBe(recorded)
  })

  it('records nothing for what is not an address', () => {
    expect(clientAddressForAudit(undefined)).toBeNull()
    expect(clientAddressForAudit('')).toBeNull()
    expect(clientAddressForAudit('unix:/run/gatehouse.sock')).toBeNull()
    expect(clientAddressForAudit('1.2.3.4\u0000')).toBeNull()
  })
})

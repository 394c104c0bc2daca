import { describe, expect, it } from 'vitest'
import { type RevocationNotice, decodeNotice, encodeNotices } from '../src/notices.js'

const id = '0b6c3a8e-7f1d-4a57-9a3e-2f4c9d1e8b70'

describe('revocation notices', () => {
  it('say whether an application was deleted or suspended, and read back as sent', () => {
    const notices: RevocationNotice[] = [
      { kind: 'application-deleted', applicationId: id },
      { kind: 'application-suspended', applicationId: id },
      { kind: 'user-application', userId: id, applicationId: id },
      { kind: 'client-credentials', clientId: 'gci_abc' },
      { kind: 'tokens', digests: ['a'.repeat(64)] },
    ]
    for (const notice of notices) {
      const [payload] = encodeNotices(notice)
      expect(decodeNotice(payload!)).toEqual(notice)
    }
    expect(encodeNotices({ kind: 'application-suspended', applicationId: id })).toEqual([`app-suspended:${id}`])
  })

  it('reads the `app:` notice of an older Gatehouse as a deletion', () => {
    expect(decodeNotice(`app:${id}`)).toEqual({ kind: 'application-deleted', applicationId: id })
  })
})

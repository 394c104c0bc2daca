import { DEFAULT_ACCENT_COLOR } from '../lib/brand.js'
import type { Mail } from '../mail/mailer.js'

/*
 * The words of every mail Gatehouse sends, in plain text and in simple HTML with the same
 * paragraphs. Links are absolute, under PUBLIC_URL. The HTML loads nothing from elsewhere; the
 * one image it may show is the operator's logo (BRAND_LOGO_FILE) from PUBLIC_URL, at one address
 * for every mail and recipient, so loading it tells no one which mail was opened, or by whom.
 */

/** The operator's brand in a mail's HTML part (docs/operating/branding.md). */
export interface MailBrand {
  /** BRAND_ACCENT_COLOR, checked at start-up: #rrggbb. */
  accentColor: string
  /** The logo's absolute URL under PUBLIC_URL; undefined: no logo, the name alone. */
  logoUrl: string | undefined
}

export interface MailFrame {
  serviceName: string
  publicUrl: string
  /** Unset: Gatehouse's own colour and no logo. */
  mailBrand?: MailBrand | undefined
}

type Part = string | { link: string; label: string }

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')
}

/** The HTML part's heading: the logo when there is one (named by its alternative text), else the name in the accent. */
function mailHeading(frame: MailFrame, accent: string): string {
  const logo = frame.mailBrand?.logoUrl
  const name = escapeHtml(frame.serviceName)
  return logo === undefined
    ? `<p style="font-size:1.25rem;font-weight:bold;color:${accent}">${name}</p>`
    : `<p><img src="${escapeHtml(logo)}" alt="${name}" height="40" style="height:40px;width:auto"></p>`
}

/** A mail of paragraphs; a link paragraph is the bare URL in text and an anchor in HTML. */
function compose(frame: MailFrame, to: string, subject: string, paragraphs: Part[]): Mail {
  const signature = `— ${frame.serviceName}, ${frame.publicUrl}/`
  const text = [...paragraphs.map((p) => (typeof p === 'string' ? p : `${p.label}:\n${p.link}`)), signature].join('\n\n') + '\n'
  // Checked at start-up as #rrggbb (src/lib/brand.ts), so it is safe inside a style attribute.
  const accent = frame.mailBrand?.accentColor ?? DEFAULT_ACCENT_COLOR
  const body = paragraphs
    .map((p) =>
      typeof p === 'string'
        ? `<p>${escapeHtml(p)}</p>`
        : `<p><a href="${escapeHtml(p.link)}" style="color:${accent}">${escapeHtml(p.label)}</a><br><span style="font-size:small">${escapeHtml(p.link)}</span></p>`,
    )
    .join('\n')
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>
<body style="font-family:sans-serif;line-height:1.5;max-width:40rem;border-top:4px solid ${accent};padding-top:.5rem">
${mailHeading(frame, accent)}
${body}
<p style="color:#57606a">${escapeHtml(signature)}</p>
</body></html>
`
  return { to, subject: `${subject} · ${frame.serviceName}`, text, html }
}

export function verificationMail(frame: MailFrame, to: string, link: string): Mail {
  return compose(frame, to, 'Verify your email address', [
    `Someone, probably you, created an account on ${frame.serviceName} with this address. Open the link below to verify it; until then the account cannot register applications.`,
    { link, label: 'Verify your email address' },
    'The link works once, for 24 hours. If you did not sign up, ignore this mail: nothing happens without the link.',
  ])
}

export function signUpAttemptMail(frame: MailFrame, to: string): Mail {
  return compose(frame, to, 'Someone tried to sign up with your address', [
    `Someone tried to create an account on ${frame.serviceName} with this address, which already has one. No new account was made and nothing changed.`,
    { link: `${frame.publicUrl}/login`, label: 'Log in' },
    { link: `${frame.publicUrl}/forgot-password`, label: 'Forgot your password? Reset it' },
    'If it was not you, you can ignore this mail.',
  ])
}

export function passwordResetMail(frame: MailFrame, to: string, link: string): Mail {
  return compose(frame, to, 'Reset your password', [
    `Someone, probably you, asked to reset the password of the ${frame.serviceName} account with this address. Open the link below to choose a new one.`,
    { link, label: 'Choose a new password' },
    'The link works once, for 1 hour. If you did not ask, ignore this mail: your password stays as it is.',
  ])
}

export function passwordResetNoAccountMail(frame: MailFrame, to: string): Mail {
  return compose(frame, to, 'Password reset requested', [
    `Someone asked to reset the password of an account on ${frame.serviceName} with this address, but no account there uses it. Nothing changed.`,
    { link: `${frame.publicUrl}/signup`, label: 'Create an account' },
    'If it was not you, you can ignore this mail.',
  ])
}

export function passwordChangedMail(frame: MailFrame, to: string, how: 'reset' | 'changed'): Mail {
  return compose(frame, to, 'Your password was changed', [
    how === 'reset'
      ? `The password of your ${frame.serviceName} account was reset with a link sent to this address, and every session of the account was logged out.`
      : `The password of your ${frame.serviceName} account was changed in its settings, and every other session of the account was logged out.`,
    'If this was not you, reset your password now, and check the applications and sessions of your account:',
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

export function emailChangeMail(frame: MailFrame, to: string, link: string): Mail {
  return compose(frame, to, 'Confirm your new email address', [
    `Someone, probably you, asked to use this address for their ${frame.serviceName} account. Open the link below to confirm; the account keeps its old address until then.`,
    { link, label: 'Confirm your new address' },
    'The link works once, for 24 hours. If you did not ask, ignore this mail.',
  ])
}

export function emailChangeRequestedMail(frame: MailFrame, to: string, newEmail: string, cancelLink: string): Mail {
  return compose(frame, to, 'Someone asked to change your email address', [
    `Someone asked to move your ${frame.serviceName} account from this address to ${newEmail}. It moves only when the link sent there is opened.`,
    'If it was you, there is nothing to do here. If it was not, cancel the change now, and then reset your password: whoever asked knows it.',
    { link: cancelLink, label: 'Cancel the change' },
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

export function emailChangeTakenMail(frame: MailFrame, to: string): Mail {
  return compose(frame, to, 'Someone tried to use your address', [
    `Someone asked to move their ${frame.serviceName} account to this address, which already belongs to an account. Nothing changed.`,
    'If it was not you, you can ignore this mail.',
  ])
}

export function emailChangedMail(frame: MailFrame, to: string, newEmail: string): Mail {
  return compose(frame, to, 'Your email address was changed', [
    `The address of your ${frame.serviceName} account was changed from ${to} to ${newEmail}. Mails about the account now go there.`,
    'If this was not you, someone else controls your account: tell the people who run this service.',
  ])
}

export function accountDeletedMail(frame: MailFrame, to: string): Mail {
  return compose(frame, to, 'Your account was deleted', [
    `Your ${frame.serviceName} account ${to} was deleted, with its applications (their access tokens no longer work), the access you gave to applications, and its sessions.`,
    'This cannot be undone. You are welcome to create a new account at any time.',
  ])
}

export function passkeyAddedMail(frame: MailFrame, to: string, name: string): Mail {
  return compose(frame, to, 'A passkey was added to your account', [
    `A passkey named "${name}" was added to your ${frame.serviceName} account. It can sign in to the account without the password.`,
    'If this was not you, someone else controls your account: remove the passkey, reset your password, and check the sessions of your account.',
    { link: `${frame.publicUrl}/account/passkeys`, label: 'Your passkeys' },
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

export function passkeyRemovedMail(frame: MailFrame, to: string, name: string): Mail {
  return compose(frame, to, 'A passkey was removed from your account', [
    `The passkey named "${name}" was removed from your ${frame.serviceName} account. It can no longer sign in to the account.`,
    'If this was not you, reset your password now, and check the sessions of your account:',
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

export function secondFactorResetMail(frame: MailFrame, to: string): Mail {
  return compose(frame, to, 'Your second factor was reset', [
    `The people who run ${frame.serviceName} removed the second factor of your account ${to}: its authenticator app, passkeys and recovery codes no longer work, and every session of the account was logged out. The access you gave to applications is unchanged.`,
    { link: `${frame.publicUrl}/login`, label: 'Log in with your password' },
    'Then set up a second factor again under Account. If you did not ask for this, reset your password and tell the people who run this service.',
  ])
}

/* Second factor (docs/accounts.md "Two-factor authentication"): every change, and every recovery code used, is told. */

const SECOND_FACTOR_WARNING = 'If this was not you, someone else knows your password and has had a second factor of your account:'

export function totpEnabledMail(frame: MailFrame, to: string): Mail {
  return compose(frame, to, 'An authenticator app was set up', [
    `An authenticator app was set up for your ${frame.serviceName} account: log-ins now ask for its code after the password. Ten recovery codes were shown once; keep them somewhere safe.`,
    'If this was not you, reset your password now and tell the people who run this service.',
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

export function totpDisabledMail(frame: MailFrame, to: string): Mail {
  return compose(frame, to, 'The authenticator app was turned off', [
    `The authenticator app of your ${frame.serviceName} account was turned off, with its password and a current code or recovery code. Log-ins no longer ask for its code.`,
    SECOND_FACTOR_WARNING,
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

export function recoveryCodesRegeneratedMail(frame: MailFrame, to: string): Mail {
  return compose(frame, to, 'New recovery codes were generated', [
    `New recovery codes were generated for your ${frame.serviceName} account; the previous ones no longer work.`,
    SECOND_FACTOR_WARNING,
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

export function recoveryCodeUsedMail(frame: MailFrame, to: string, left: number): Mail {
  return compose(frame, to, 'A recovery code was used', [
    `A recovery code was used to log in to your ${frame.serviceName} account; ${left === 1 ? '1 code is' : `${left} codes are`} left. Each code works once: generate new ones on the Two-factor authentication page when few are left.`,
    { link: `${frame.publicUrl}/account/two-factor`, label: 'Two-factor authentication' },
    'If this was not you, someone else knows your password and one of your recovery codes: reset your password now.',
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

/** When and from where, as the attack mails name them: UTC to the minute, and the client's address when known. */
function whenAndWhere(at: Date, address: string | null): string {
  const when = `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`
  return address === null ? `at ${when}` : `at ${when} from the address ${address}`
}

/** The first wrong second-factor code of a burst (src/accounts/second-factor/guessing.ts): one mail, not one per code. */
export function wrongSecondFactorCodesMail(frame: MailFrame, to: string, event: { at: Date; address: string | null }): Mail {
  return compose(frame, to, 'A wrong two-factor code was typed for your account', [
    `A wrong authenticator-app or recovery code was typed for your ${frame.serviceName} account ${whenAndWhere(event.at, event.address)}, after the right password or in one of your sessions. Further wrong codes in the next hour are not mailed one by one.`,
    'If this was not you, someone else knows your password: change it now. Your second factor still stops them.',
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

/** The authenticator app's codes were locked after too many wrong ones in a row. */
export function secondFactorLockedMail(frame: MailFrame, to: string, event: { at: Date; address: string | null; failed: number }): Mail {
  return compose(frame, to, 'Authenticator app codes are locked for your account', [
    `${event.failed} wrong two-factor codes in a row were typed for your ${frame.serviceName} account, the last ${whenAndWhere(event.at, event.address)}. Codes of your authenticator app are no longer accepted for it, even right ones, until you log in with a recovery code or a passkey.`,
    'If this was not you, someone else knows your password: reset it now.',
    { link: `${frame.publicUrl}/forgot-password`, label: 'Reset your password' },
  ])
}

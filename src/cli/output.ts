/* What the command line prints: its usage, and tables or records for people (--json is plain JSON). */

export const USAGE = `Usage: gatehouse <command> [--json]

  admin add <email>                 make a user an operator (the only way to become one)
  admin remove <email>              take the operator role away
  admin list                        list the operators
  users list [--search TEXT] [--page N]
  users show <email>
  users suspend <email>             end their sessions, revoke their tokens, suspend their applications
  users unsuspend <email>
  users delete <email>              delete the account, its applications, grants and tokens
  users reset-second-factor <email> remove its TOTP, passkeys and recovery codes, end its sessions and their refresh tokens; grants kept
  apps list [--search TEXT] [--page N]   by name, client_id or owner's email
  apps show <client_id>
  apps suspend <client_id>          revoke its tokens and codes; it can no longer authorize or get tokens
  apps unsuspend <client_id>
  apps verify <client_id>           its consent page says "Verified by <SERVICE_NAME>"
  apps unverify <client_id>
  apps resource-server <client_id> on|off   may introspect any token and subscribe to revocations
  apps client-credentials <client_id> --scopes "SCOPES" | off
                                    a machine application's tokens for itself (no user), with these scopes
  apps resources <client_id> [--add URL]... [--remove URL]... [--ttl SECONDS|default]
                                    a resource server's resource identifiers (RFC 8707) and its tokens' lifetime
  apps delete <client_id>
  tokens revoke --app <client_id> [--user <email>]
  keys list                         the ID Token signing keys, retired ones too
  scopes                            the scopes applications may request: SCOPES_FILE's, or the built-in six
  keys rotate                       add the next signing keys: published now, signing after the JWKS's cache lifetime
  migrate                           apply pending database migrations
  janitor                           delete expired rows once now
  outbox [--to EMAIL] [--last]      the newest mails of the outbox (no SMTP_URL), decoded, with their links

The configuration is the server's: DATABASE_URL or DATA_DIR, and the other variables of docs/operating/configuration.md.`

export type Row = Record<string, string | number | boolean | null>

export const iso = (d: Date | null) => (d === null ? null : d.toISOString())

/** Columns padded to their widest cell; `null` shows as "-". */
export function formatTable(rows: readonly Row[], columns: readonly string[]): string {
  if (rows.length === 0) return '(none)'
  const cell = (v: Row[string] | undefined) => (v === null || v === undefined ? '-' : String(v))
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)))
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n')
}

export function formatRecord(row: Row): string {
  const width = Math.max(...Object.keys(row).map((k) => k.length))
  return Object.entries(row)
    .map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${v === null ? '-' : String(v)}`)
    .join('\n')
}

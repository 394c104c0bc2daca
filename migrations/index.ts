import type { Migration } from 'kysely'
import * as m0001 from './0001_initial.js'
import * as m0002 from './0002_pending_authorizations.js'
import * as m0003 from './0003_server_secrets.js'
import * as m0004 from './0004_janitor_indexes.js'
import * as m0005 from './0005_quota_indexes.js'
import * as m0006 from './0006_audit_events.js'
import * as m0007 from './0007_operators.js'
import * as m0008 from './0008_accounts.js'
import * as m0009 from './0009_account_recovery.js'
import * as m0010 from './0010_second_factor.js'
import * as m0011 from './0011_signing_keys.js'
import * as m0012 from './0012_authorize_requests.js'
import * as m0013 from './0013_implicit_id_token.js'
import * as m0014 from './0014_post_logout_redirect_uris.js'
import * as m0015 from './0015_token_digest_key.js'
import * as m0016 from './0016_totp_failed_codes.js'
import * as m0017 from './0017_live_token_view.js'
import * as m0018 from './0018_application_kinds.js'
import * as m0019 from './0019_public_clients.js'
import * as m0020 from './0020_device_authorizations.js'
import * as m0021 from './0021_machine_tokens.js'
import * as m0022 from './0022_bound_and_expiring_tokens.js'
import * as m0023 from './0023_held_request_dpop_jkt.js'
import * as m0024 from './0024_audit_event_areas.js'
import * as m0025 from './0025_resource_indicators.js'
import * as m0026 from './0026_client_metadata_documents.js'
import * as m0027 from './0027_grant_resources.js'

/** The only list the migrator sees: explicit, ordered, and safe under ESM and bundling. */
export const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_pending_authorizations': m0002,
  '0003_server_secrets': m0003,
  '0004_janitor_indexes': m0004,
  '0005_quota_indexes': m0005,
  '0006_audit_events': m0006,
  '0007_operators': m0007,
  '0008_accounts': m0008,
  '0009_account_recovery': m0009,
  '0010_second_factor': m0010,
  '0011_signing_keys': m0011,
  '0012_authorize_requests': m0012,
  '0013_implicit_id_token': m0013,
  '0014_post_logout_redirect_uris': m0014,
  '0015_token_digest_key': m0015,
  '0016_totp_failed_codes': m0016,
  '0017_live_token_view': m0017,
  '0018_application_kinds': m0018,
  '0019_public_clients': m0019,
  '0020_device_authorizations': m0020,
  '0021_machine_tokens': m0021,
  '0022_bound_and_expiring_tokens': m0022,
  '0023_held_request_dpop_jkt': m0023,
  '0024_audit_event_areas': m0024,
  '0025_resource_indicators': m0025,
  '0026_client_metadata_documents': m0026,
  '0027_grant_resources': m0027,
}

import { Init1763769600000 } from './1763769600000-init.js';
import { AuthFailureCounts1764100000000 } from './1764100000000-auth-failure-counts.js';
import { AuditEvents1764200000000 } from './1764200000000-audit-events.js';
import { ApiKeyRotation1764200001000 } from './1764200001000-api-key-rotation.js';
import { UsageHistory1764300000000 } from './1764300000000-usage-history.js';
import { Events1764400000000 } from './1764400000000-events.js';
import { VerificationCache1764500000000 } from './1764500000000-verification-cache.js';
import { UsersEmailCitext1764600000000 } from './1764600000000-users-email-citext.js';
import { ActiveKeysIndex1764700000000 } from './1764700000000-active-keys-index.js';
import { ApiKeyCounts1764800000000 } from './1764800000000-api-key-counts.js';
import { WebhookSecretRotation1764900500000 } from './1764900500000-webhook-secret-rotation.js';
import { VerificationNotifyMoves1764910000000 } from './1764910000000-verification-notify-moves.js';
import { AuditOwnerOnlyRetention1764910001000 } from './1764910001000-audit-owner-only-retention.js';
import { KeyControls1765100000000 } from './1765100000000-key-controls.js';
import { ServiceKeys1765200000000 } from './1765200000000-service-keys.js';
import { AuditPseudonymise1765400000000 } from './1765400000000-audit-pseudonymise.js';
import { OrgApiVersion1765500000000 } from './1765500000000-org-api-version.js';
import { OrgKeyPolicies1765300000000 } from './1765300000000-org-key-policies.js';
import { ApiKeyScopeUsage1765600000000 } from './1765600000000-api-key-scope-usage.js';
import { ErasureScrub1765610000000 } from './1765610000000-erasure-scrub.js';
import { MintUnderKeyPolicy1765620000000 } from './1765620000000-mint-under-key-policy.js';
import { KeyDescription1765630000000 } from './1765630000000-key-description.js';
import { VerificationOutcomes1766000000010 } from './1766000000010-verification-outcomes.js';
import { DeploymentMeters1766000000020 } from './1766000000020-deployment-meters.js';
import { SlidingRateWindows1766000000030 } from './1766000000030-sliding-rate-windows.js';
import { MeterLeases1766000000050 } from './1766000000050-meter-leases.js';
import { RateWindowLength1766000000060 } from './1766000000060-rate-window-length.js';
import { KeyControlsSetBy1766000000070 } from './1766000000070-key-controls-set-by.js';

/** Every migration, oldest first: what a host adds to its own DataSource (`migrations: [...MIGRATIONS]`). A new one is added here. */
export const MIGRATIONS = [
  Init1763769600000,
  AuthFailureCounts1764100000000,
  AuditEvents1764200000000,
  ApiKeyRotation1764200001000,
  UsageHistory1764300000000,
  Events1764400000000,
  VerificationCache1764500000000,
  UsersEmailCitext1764600000000,
  ActiveKeysIndex1764700000000,
  ApiKeyCounts1764800000000,
  WebhookSecretRotation1764900500000,
  VerificationNotifyMoves1764910000000,
  AuditOwnerOnlyRetention1764910001000,
  KeyControls1765100000000,
  ServiceKeys1765200000000,
  OrgKeyPolicies1765300000000,
  AuditPseudonymise1765400000000,
  OrgApiVersion1765500000000,
  ApiKeyScopeUsage1765600000000,
  ErasureScrub1765610000000,
  MintUnderKeyPolicy1765620000000,
  KeyDescription1765630000000,
  VerificationOutcomes1766000000010,
  DeploymentMeters1766000000020,
  SlidingRateWindows1766000000030,
  MeterLeases1766000000050,
  RateWindowLength1766000000060,
  KeyControlsSetBy1766000000070,
];

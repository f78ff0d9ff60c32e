import { toApiKeyRecord } from '../api-keys/api-key.record.js';
import type { ApiKeyEntity } from '../api-keys/api-key.entity.js';
import type { KeyState } from '../api-keys/key-state.js';
import { keyEventData, type KeyEventFields } from '../events/event-types.js';
import type { ServiceKeyDto } from './dto/service-key.dto.js';

export type ServiceKeyRecord = ServiceKeyDto;

/** A service key's record: the key record of the contract, plus its owner (the org), its minting admin and its holder. */
export function toServiceKeyRecord(k: ApiKeyEntity & { state?: KeyState }, now: Date): ServiceKeyRecord {
  const record: ServiceKeyRecord = { ...toApiKeyRecord(k, now), owner: { type: 'org' }, user_id: k.userId };
  // The operator CLI mints as no one (the audit log names it): no created_by then.
  if (k.createdBy) record.created_by = k.createdBy;
  return record;
}

/** A service key as its events describe it: the key's masked fields, the owner and who minted it. */
export function serviceKeyEventData(k: KeyEventFields & { createdBy?: string | null }): Record<string, unknown> {
  return { ...keyEventData(k), owner: { type: 'org' }, created_by: k.createdBy };
}

import { ApiKeyEntity } from '../api-keys/api-key.entity.js';
import { MembershipEntity } from '../directory/membership.entity.js';
import { OrgEntity } from '../directory/org.entity.js';
import { UserEntity } from '../directory/user.entity.js';
import { WorkspaceEntity } from '../directory/workspace.entity.js';
import { UsageCounterEntity } from '../usage/usage-counter.entity.js';
import { Init1763769600000 } from './migrations/1763769600000-init.js';
import { UsersEmailCitext1764600000000 } from './migrations/1764600000000-users-email-citext.js';

/** Everything a host adds to its own DataSource: `entities: [...ENTITIES]`, `migrations: [...MIGRATIONS]`. */
export const ENTITIES = [OrgEntity, UserEntity, MembershipEntity, WorkspaceEntity, ApiKeyEntity, UsageCounterEntity];
export const MIGRATIONS = [
  Init1763769600000,
  // issue 13 (library): e-mail uniqueness that synchronize and the migrations both create.
  UsersEmailCitext1764600000000,
];

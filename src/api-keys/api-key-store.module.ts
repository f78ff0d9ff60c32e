import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DatabaseModule } from '../database/database.module.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyWriteRepository } from './api-key-write.repository.js';
import { ApiKeyRepository } from './api-key.repository.js';
import { ApiKeyVerificationStore } from './api-key-verification.store.js';
import { ApiKeyPolicyRepository } from './api-key-policy.repository.js';

/**
 * The api_keys table, on its own so that the modules that read it (the key feature, usage history,
 * leaked-key revocation, and auth through its ApiKeyStore port bound in core/) share its
 * repositories without importing the key feature's HTTP module or each other. Split by concern:
 * verification (ApiKeyVerificationStore), the one-statement mint and revoke (ApiKeyWriteRepository), and
 * management (ApiKeyRepository); the SQL of all three is in api-key.sql.ts.
 */
@Module({
  imports: [TypeOrmModule.forFeature([ApiKeyEntity]), DatabaseModule],
  providers: [ApiKeyRepository, ApiKeyWriteRepository, ApiKeyVerificationStore, ApiKeyPolicyRepository],
  exports: [ApiKeyRepository, ApiKeyWriteRepository, ApiKeyVerificationStore, ApiKeyPolicyRepository],
})
export class ApiKeyStoreModule {}

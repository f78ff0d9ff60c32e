import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyRepository } from './api-key.repository.js';

/**
 * The api_keys table, on its own so that the modules that read it (the key feature, usage history,
 * leaked-key revocation, and auth through its ApiKeyStore port bound in core/) share one repository
 * without importing the key feature's HTTP module or each other.
 */
@Module({
  imports: [TypeOrmModule.forFeature([ApiKeyEntity])],
  providers: [ApiKeyRepository],
  exports: [ApiKeyRepository],
})
export class ApiKeyStoreModule {}

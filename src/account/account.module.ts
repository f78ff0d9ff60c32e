import { Module } from '@nestjs/common';
import { loadAccountAssets } from './account-assets.js';
import { ACCOUNT_ASSETS, AccountController } from './account.controller.js';

/** GET /account: the browser page for keys and usage, served by the standalone app. */
@Module({
  controllers: [AccountController],
  providers: [{ provide: ACCOUNT_ASSETS, useFactory: () => loadAccountAssets() }],
})
export class AccountModule {}

import {
  Global,
  Injectable,
  Module,
  type DynamicModule,
  type OnModuleInit,
  type Provider,
  type Type,
} from '@nestjs/common';
import { InjectDataSource, TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { adaptToTransactionPooler, discardUnsafeReleases, pgPoolOf } from '../database/pg-pool.js';
import { ApiKeyStoreModule } from '../api-keys/api-key-store.module.js';
import { ApiKeyVerificationStore } from '../api-keys/api-key-verification.store.js';
import { ApiKeyStore } from '../auth/api-key-store.js';
import { RequestBudget } from '../auth/request-budget.js';
import { BudgetsModule } from '../budgets/budgets.module.js';
import { OrgMeter } from '../budgets/org-meter.js';
import { SpendGuard } from '../budgets/spend.guard.js';
import { KeyPolicyPort } from '../api-keys/key-policy.port.js';
import { KeyPolicyRules } from '../key-policies/key-policy-rules.js';
import { KeyPolicyStoreModule } from '../key-policies/key-policy-store.module.js';
import { Clock } from '../common/clock.js';
import { ScopeRegistry } from '../common/scope-registry.js';
import { MeterRegistry } from '../common/meter-registry.js';
import { ENTITIES } from './schema.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { ActivityEvents } from '../events/activity-events.js';
import { EventOutbox } from '../events/event-outbox.js';
import { DatabaseModule } from '../database/database.module.js';
import { KEYS_USAGE_IDENTITY_OPTIONS } from './keys-usage-identity.module-definition.js';
import type { KeysUsageIdentityOptions } from '../settings/keys-usage-identity.options.js';
import { Settings } from '../settings/settings.js';
import { UsageModule } from '../usage/usage.module.js';
import { UsageOrgMeter } from '../usage/usage-org-meter.js';

/**
 * The DataSource's pool (ours or the host's) discards clients released mid-statement or
 * mid-transaction, and behind a transaction pooler (Settings.database) runs no named statement
 * and carries its timeouts with each transaction.
 */
@Injectable()
class PoolHygiene implements OnModuleInit {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly settings: Settings,
  ) {}

  onModuleInit(): void {
    const pool = pgPoolOf(this.db);
    if (!pool) return;
    discardUnsafeReleases(pool);
    const d = this.settings.database;
    adaptToTransactionPooler(pool, {
      namedStatements: d.namedStatements,
      transactionTimeouts:
        d.transactionStatementTimeoutMs === null
          ? null
          : { statementMs: d.transactionStatementTimeoutMs, idleInTransactionMs: d.idleInTransactionMs },
    });
  }
}

/**
 * What every module below the root needs: the settings, the clock, the in-process activity
 * signal, the event outbox (off until EventOutboxModule turns it on), Transactions (DatabaseModule),
 * the org directory, budgets/ bound to auth's RequestBudget port and usage/ to budgets' OrgMeter port, and auth's ApiKeyStore port bound to api-keys' verification store (the one
 * place auth meets the key feature, so neither imports the other). The only global module, so
 * the feature modules see these tokens; it registers no feature's repository of its own and
 * nothing that acts on a host's routes.
 */
@Global()
@Module({})
export class CoreModule {
  static register(
    optionsProviders: Provider[],
    imports: DynamicModule['imports'],
    directory: Type<OrgDirectory>,
  ): DynamicModule {
    return {
      module: CoreModule,
      imports: [
        ...(imports ?? []),
        TypeOrmModule.forFeature(ENTITIES),
        DatabaseModule,
        ApiKeyStoreModule,
        KeyPolicyStoreModule,
        BudgetsModule,
        UsageModule,
      ],
      providers: [
        ...optionsProviders,
        {
          provide: Settings,
          inject: [KEYS_USAGE_IDENTITY_OPTIONS],
          useFactory: (options: KeysUsageIdentityOptions) => new Settings(options),
        },
        { provide: Clock, inject: [Settings], useFactory: (s: Settings) => s.clock },
        { provide: ScopeRegistry, inject: [Settings], useFactory: (s: Settings) => s.scopes },
        { provide: MeterRegistry, inject: [Settings], useFactory: (s: Settings) => s.meters },
        ActivityEvents,
        EventOutbox,
        PoolHygiene,
        { provide: ApiKeyStore, useExisting: ApiKeyVerificationStore },
        // Auth's port for what a request spends, bound to budgets/ (auth only authenticates).
        { provide: RequestBudget, useExisting: SpendGuard },
        // Budgets' port to the org's meters (what `@Charges` spends), bound to usage/ (budgets never imports a feature).
        { provide: OrgMeter, useExisting: UsageOrgMeter },
        // The key feature's port to the org's key policy (key-policies/), bound here so neither imports the other's module.
        { provide: KeyPolicyPort, useExisting: KeyPolicyRules },
        directory,
        { provide: OrgDirectory, useExisting: directory },
      ],
      exports: [
        Settings,
        Clock,
        ScopeRegistry,
        MeterRegistry,
        ActivityEvents,
        EventOutbox,
        DatabaseModule,
        ApiKeyStore,
        RequestBudget,
        OrgMeter,
        BudgetsModule,
        KeyPolicyPort,
        OrgDirectory,
        KEYS_USAGE_IDENTITY_OPTIONS,
      ],
    };
  }
}

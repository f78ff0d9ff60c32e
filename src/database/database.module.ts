import { Module } from '@nestjs/common';
import { Transactions } from './transactions.js';

/**
 * The database layer's services for the modules above it: Transactions (one transaction around a
 * change and what is written with it). The DataSource itself is the host's (or the server's)
 * TypeORM module's.
 */
@Module({ providers: [Transactions], exports: [Transactions] })
export class DatabaseModule {}

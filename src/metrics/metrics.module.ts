import { Module, type DynamicModule } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { VersioningModule } from '../versioning/versioning.module.js';
import { MetricsServer } from './metrics-server.js';
import { MetricsTokenGuard } from './metrics-token.guard.js';
import { MetricsController } from './metrics.controller.js';
import { METRICS_OPTIONS, type MetricsOptions } from './metrics.options.js';
import { MetricsService } from './metrics.service.js';

/** Prometheus metrics of the standalone app: on the API port, or on METRICS_PORT alone. */
@Module({})
export class MetricsModule {
  static register(options: MetricsOptions): DynamicModule {
    const ownPort = options.port !== undefined;
    return {
      module: MetricsModule,
      imports: [AuthModule, VersioningModule],
      providers: [
        { provide: METRICS_OPTIONS, useValue: options },
        MetricsService,
        MetricsTokenGuard,
        ...(ownPort ? [MetricsServer] : []),
      ],
      controllers: ownPort ? [] : [MetricsController],
      exports: [MetricsService],
    };
  }
}

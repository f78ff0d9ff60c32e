import { Module, type DynamicModule } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { OrgsController } from './orgs.controller.js';
import { OrgsService } from './orgs.service.js';

/** The caller's orgs and their members (reads through OrgDirectory; owns no table). */
@Module({
  imports: [AuthModule],
  providers: [OrgsService],
  exports: [OrgsService],
})
export class OrgsModule {
  static withHttp(): DynamicModule {
    return { module: OrgsModule, controllers: [OrgsController] };
  }
}

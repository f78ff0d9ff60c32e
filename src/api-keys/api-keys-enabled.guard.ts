import { HttpException, HttpStatus, Injectable, type CanActivate } from '@nestjs/common';
import { Settings } from '../settings/settings.js';

/** 501 when API_KEY_SECRET is not configured. Placed after authentication. */
@Injectable()
export class ApiKeysEnabledGuard implements CanActivate {
  constructor(private readonly settings: Settings) {}

  canActivate(): boolean {
    if (!this.settings.keysConfigured) {
      throw new HttpException(
        { statusCode: 501, error: 'Not Implemented', message: 'API keys are not configured on this deployment' },
        HttpStatus.NOT_IMPLEMENTED,
      );
    }
    return true;
  }
}

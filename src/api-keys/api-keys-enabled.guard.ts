import { HttpException, HttpStatus, Injectable, type CanActivate } from '@nestjs/common';
import { Settings } from '../settings/settings.js';
import { ERRORS } from '../common/error-messages.js';

/** 501 when API_KEY_SECRET is not configured. Placed after authentication. */
@Injectable()
export class ApiKeysEnabledGuard implements CanActivate {
  constructor(private readonly settings: Settings) {}

  canActivate(): boolean {
    if (!this.settings.keysConfigured) {
      throw new HttpException(
        { statusCode: 501, error: 'Not Implemented', message: ERRORS.keysNotConfigured },
        HttpStatus.NOT_IMPLEMENTED,
      );
    }
    return true;
  }
}

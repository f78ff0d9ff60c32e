import { Reflector } from '@nestjs/core';
import type { Scope } from '../common/roles.js';

/** Which credentials a route accepts: any, or a browser session only. */
export type AuthMode = 'any' | 'session';
export const AuthModeMeta = Reflector.createDecorator<AuthMode>();
export const RequiredScopesMeta = Reflector.createDecorator<Scope[]>();

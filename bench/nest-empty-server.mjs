// The ceiling: an empty Nest 12 route on Fastify, no guard, no database, answering the body of a
// /me response. Issue 20 named it: whatever the service does per request comes on top of this.
// `npm run bench` prints it as a reference row beside the bare node:http server.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';

const body = {
  user_id: '6f1c1f57-3b8e-4f44-9d7e-1b2a3c4d5e6f',
  org_id: '0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d',
  email: 'bench@example.com',
  scopes: ['decisions:read'],
  org_role: 'owner',
  org_member_count: 1,
};

class MeController {
  me() {
    return body;
  }
}
const me = Object.getOwnPropertyDescriptor(MeController.prototype, 'me');
Object.defineProperty(MeController.prototype, 'me', Reflect.decorate([Get('me')], MeController.prototype, 'me', me));
Controller()(MeController);

class EmptyModule {}
Module({ controllers: [MeController] })(EmptyModule);

const app = await NestFactory.create(EmptyModule, new FastifyAdapter(), { logger: false });
await app.listen(0, '127.0.0.1');
process.stdout.write(`${JSON.stringify({ port: app.getHttpServer().address().port })}\n`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));

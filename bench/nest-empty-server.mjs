// The ceiling: an empty Nest 12 route on Fastify, no guard, no database, answering the body of a
// /me response. Whatever the service does per request comes on top of this.
// `npm run bench` prints it as a reference row beside the bare node:http server.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ME_BODY } from './me-body.mjs';

const body = ME_BODY;

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

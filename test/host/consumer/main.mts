import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module.mjs';

const app = await NestFactory.create<NestExpressApplication>(AppModule, { logger: ['error'] });
app.set('trust proxy', 'loopback'); // so per-address throttling sees client addresses
app.enableShutdownHooks(); // flushes pending last-used stamps on shutdown
await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
// The test reads the port from this line.
process.stdout.write(`listening ${(app.getHttpServer().address() as { port: number }).port}\n`);

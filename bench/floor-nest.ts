/**
 * The framework floor: the floor's own tokenize (bench/floor.ts, the same work and the same SQL), served
 * the way the design card says the service is built and nothing more: NestJS on platform-express, one
 * controller, the JSON body parser and nestjs-pino's one request log line (asynchronous standard output,
 * as the service writes it). No key, no guard, no interceptor, no validation pipe, no audit of its own.
 * What it loses against the floor is what the framework costs by itself; what the service loses against
 * it is the service's own work (docs/benchmarks.md).
 *
 *   DATABASE_URL=postgres://... PORT=4101 npx ts-node --transpile-only bench/floor-nest.ts
 */
import 'reflect-metadata';
import { Body, Controller, Get, HttpCode, Module, Post, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Response } from 'express';
import { Logger, LoggerModule } from 'nestjs-pino';
import { destination } from 'pino';
import { createFloorTables, tokenizeWork } from './floor';

@Controller()
class FloorController {
  @Post('tokenize')
  async tokenize(@Body() body: unknown, @Res() res: Response): Promise<void> {
    const [status, answer] = await tokenizeWork(body);
    res.status(status).json(answer);
  }

  @Get('ready')
  @HttpCode(200)
  ready(): { status: string } {
    return { status: 'ready' };
  }
}

/**
 * FLOOR_LOG=none leaves the request log line out (to tell the framework's cost from the log's);
 * FLOOR_LOG=buffered writes lines in blocks of 4 KiB (and at least every 100 ms).
 */
const logged = process.env.FLOOR_LOG !== 'none';
const buffered = process.env.FLOOR_LOG === 'buffered';
const stream = destination({ dest: 1, sync: false, minLength: buffered ? 4096 : 0 });
if (buffered) setInterval(() => stream.flush(), 100).unref();

@Module({
  imports: [
    LoggerModule.forRoot({
      pinoHttp: { stream, quietReqLogger: true },
    }),
  ].slice(0, logged ? 1 : 0),
  controllers: [FloorController],
})
class FloorModule {}

async function main(): Promise<void> {
  await createFloorTables();
  const app = await NestFactory.create(FloorModule, { bufferLogs: logged });
  if (logged) app.useLogger(app.get(Logger));
  await app.listen(Number(process.env.PORT ?? 4101), '127.0.0.1');
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

void main();
